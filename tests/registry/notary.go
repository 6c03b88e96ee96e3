package main

// Notary (notation) signatures for `registry push REF --notary CHAIN.pem KEY.pem [--cose] [--tamper]`.
//
// The envelope is made by notation-go's own generic signer (signer.NewGenericSignerFromFiles: CHAIN.pem the
// signing certificate first, its issuers after it, root last; KEY.pem its unencrypted PKCS#8 key) and stored
// by notation.Sign through notation-go's registry.Repository over oras-go, exactly as `notation sign` stores
// it: an OCI image manifest of artifactType application/vnd.cncf.notary.signature whose subject is the image,
// one layer holding the envelope (application/jose+json, or application/cose with --cose), annotated with the
// chain's thumbprints. oras-go uses the registry's OCI 1.1 referrers API and, when the registry has none
// (`registry serve --no-referrers`), the referrers tag schema (an index tagged sha256-<hex>).
//
// --expiry SECONDS: the signature's io.cncf.notary.expiry that many seconds after signing (an expired
// signature, once they passed).
// --tamper: the envelope is changed after signing (its payload for JWS, a byte of its signature for COSE), so
// it must not verify.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	"github.com/notaryproject/notation-core-go/signature"
	_ "github.com/notaryproject/notation-core-go/signature/cose"
	_ "github.com/notaryproject/notation-core-go/signature/jws"
	"github.com/notaryproject/notation-go"
	notationregistry "github.com/notaryproject/notation-go/registry"
	"github.com/notaryproject/notation-go/signer"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/registry/remote"
)

// tamperingSigner hands notation.Sign an envelope changed after notation's signer made it.
type tamperingSigner struct {
	inner notation.Signer
}

func (t tamperingSigner) Sign(ctx context.Context, desc ocispec.Descriptor, opts notation.SignerSignOptions) ([]byte, *signature.SignerInfo, error) {
	blob, info, err := t.inner.Sign(ctx, desc, opts)
	if err != nil {
		return nil, nil, err
	}
	if opts.SignatureMediaType == "application/jose+json" {
		var env map[string]any
		if err := json.Unmarshal(blob, &env); err != nil {
			return nil, nil, err
		}
		body, err := base64.RawURLEncoding.DecodeString(env["payload"].(string))
		if err != nil {
			return nil, nil, err
		}
		// the payload's size claim changes: a payload the signature does not cover
		body = bytes.Replace(body, []byte(`"size":`), []byte(`"size":1`), 1)
		env["payload"] = base64.RawURLEncoding.EncodeToString(body)
		blob, err = json.Marshal(env)
		return blob, info, err
	}
	// COSE_Sign1: the signature is the last byte string of the structure; flip its last byte
	blob = append([]byte(nil), blob...)
	blob[len(blob)-1] ^= 0x01
	return blob, info, nil
}

func notarySign(ref string, digest string, args pushArgs) error {
	ctx := context.Background()
	var s notation.Signer
	s, err := signer.NewGenericSignerFromFiles(args.notaryKey, args.notaryChain)
	if err != nil {
		return fmt.Errorf("notation signer: %w", err)
	}
	if args.tamper {
		s = tamperingSigner{s}
	}
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
	mediaType := "application/jose+json"
	if args.cose {
		mediaType = "application/cose"
	}
	_, err = notation.Sign(ctx, s, notationregistry.NewRepository(repo), notation.SignOptions{
		SignerSignOptions: notation.SignerSignOptions{SignatureMediaType: mediaType,
			ExpiryDuration: time.Duration(args.expirySeconds) * time.Second},
		ArtifactReference: digest,
	})
	return err
}
