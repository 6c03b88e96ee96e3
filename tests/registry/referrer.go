package main

// OCI 1.1 referrer artifacts for `registry push REF --referrer ARTIFACT_TYPE PAYLOAD.json
// [--referrer-notary CHAIN.pem KEY.pem] [--tag-schema] [--tamper]` (repeatable): the attestations an
// ImageValidatingPolicy names with `attestations[].referrer.type` and a `notary` attestor verifies (kk:
// pkg/imageverification/imageverifiers/notary VerifyAttestationSignature, imagedataloader GetPayload).
//
// Each referrer is an OCI image manifest packed by oras-go (PackManifestVersion1_1, as `oras attach` packs it):
// artifactType ARTIFACT_TYPE, a config `{}` of media type ARTIFACT_TYPE too (go-containerregistry's registry
// lists a referrer under its config's media type, ignoring artifactType; a registry following the distribution
// spec lists artifactType: both say ARTIFACT_TYPE), one layer of media type application/json holding
// PAYLOAD.json as is, subject the pushed image. oras-go stores it through the registry's referrers API, or with --tag-schema
// under the referrers tag schema (the index tagged sha256-<hex> of the image).
//
// --referrer-notary signs that referrer with notation-go exactly as --notary signs the image (notary.go): the
// signature is a referrer of the referrer. --tamper: the referrer's payload is changed after signing, i.e. the
// signature names the original referrer's descriptor while its subject is the changed referrer (the only one
// pushed), so notation finds it and must refuse it (the content descriptor does not match).

import (
	"bytes"
	"context"
	"fmt"
	"os"

	"github.com/notaryproject/notation-go"
	notationregistry "github.com/notaryproject/notation-go/registry"
	"github.com/notaryproject/notation-go/signer"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/content/memory"
	"oras.land/oras-go/v2/registry/remote"
)

type referrerArgs struct {
	artifactType, payload  string
	notaryChain, notaryKey string
}

// retargeted stores a signature made over one descriptor under another subject (the tampered case).
type retargeted struct {
	notationregistry.Repository
	signed, subject ocispec.Descriptor
}

func (r retargeted) Resolve(context.Context, string) (ocispec.Descriptor, error) {
	return r.signed, nil
}

func (r retargeted) PushSignature(ctx context.Context, mediaType string, blob []byte, _ ocispec.Descriptor,
	annotations map[string]string) (ocispec.Descriptor, ocispec.Descriptor, error) {
	return r.Repository.PushSignature(ctx, mediaType, blob, r.subject, annotations)
}

// packReferrer packs (and pushes to target) the referrer manifest of body for subject.
func packReferrer(ctx context.Context, target oras.Target, subject ocispec.Descriptor, artifactType string,
	body []byte) (ocispec.Descriptor, error) {
	layer := content.NewDescriptorFromBytes("application/json", body)
	config := content.NewDescriptorFromBytes(artifactType, []byte("{}"))
	for _, blob := range []struct {
		desc ocispec.Descriptor
		data []byte
	}{{layer, body}, {config, []byte("{}")}} {
		if err := target.Push(ctx, blob.desc, bytes.NewReader(blob.data)); err != nil {
			return ocispec.Descriptor{}, err
		}
	}
	return oras.PackManifest(ctx, target, oras.PackManifestVersion1_1, artifactType,
		oras.PackManifestOptions{Subject: &subject, Layers: []ocispec.Descriptor{layer}, ConfigDescriptor: &config})
}

func pushReferrers(ref, imageDigest string, args pushArgs) error {
	ctx := context.Background()
	repo, err := remote.NewRepository(ref)
	if err != nil {
		return err
	}
	repo.PlainHTTP = true // the test registry speaks plain HTTP on loopback
	if args.tagSchema {
		if err := repo.SetReferrersCapability(false); err != nil {
			return err
		}
	}
	subject, err := repo.Resolve(ctx, imageDigest)
	if err != nil {
		return err
	}
	for _, r := range args.referrers {
		body, err := os.ReadFile(r.payload)
		if err != nil {
			return err
		}
		signed := ocispec.Descriptor{}
		if args.tamper && r.notaryChain != "" {
			// the descriptor the signature names: the referrer as it was before its payload changed
			if signed, err = packReferrer(ctx, memory.New(), subject, r.artifactType, body); err != nil {
				return err
			}
			body = append(bytes.TrimRight(body, " \n"), []byte("\n ")...)
		}
		pushed, err := packReferrer(ctx, repo, subject, r.artifactType, body)
		if err != nil {
			return fmt.Errorf("referrer %s: %w", r.artifactType, err)
		}
		fmt.Fprintf(os.Stderr, "referrer %s %s\n", r.artifactType, pushed.Digest)
		if r.notaryChain == "" {
			continue
		}
		s, err := signer.NewGenericSignerFromFiles(r.notaryKey, r.notaryChain)
		if err != nil {
			return fmt.Errorf("notation signer: %w", err)
		}
		target := notationregistry.NewRepository(repo)
		reference := pushed.Digest
		if signed.Digest != "" {
			target = retargeted{target, signed, pushed}
			reference = signed.Digest
		}
		if _, err := notation.Sign(ctx, s, target, notation.SignOptions{
			SignerSignOptions: notation.SignerSignOptions{SignatureMediaType: "application/jose+json"},
			ArtifactReference: reference.String(),
		}); err != nil {
			return fmt.Errorf("referrer %s: notation sign: %w", r.artifactType, err)
		}
	}
	return nil
}
