// Command registry is the OCI registry of kyrec's registry tests and the tool that fills it.
//
//	registry serve [--watch-pid PID] [--no-referrers]
//	                                    in-memory registry on 127.0.0.1:<free port>; prints "ready HOST:PORT",
//	                                    serves until SIGTERM/SIGINT
//	registry push REF [--sign KEY.pem [--cert CERT.pem] [--chain CHAIN.pem]]
//	              [--attest PREDICATE_TYPE PREDICATE.json --key KEY.pem] [--tamper]
//	                                    pushes a small random image to REF, signs/attests it, prints its digest;
//	                                    --cert/--chain: keyless-style, the signing key's certificate and its
//	                                    chain (root last) in the signature's annotations, as cosign stores them
//	              [--notary CHAIN.pem KEY.pem [--cose] [--tag-schema] [--expiry SECONDS]]
//	                                    --notary: also a Notary signature made by notation-go (notary.go)
//	              [--referrer ARTIFACT_TYPE PAYLOAD.json [--referrer-notary CHAIN.pem KEY.pem]]...
//	                                    OCI 1.1 referrer artifacts of the image, each optionally signed by
//	                                    notation-go (referrer.go)
//	registry tuf DIR [--fulcio ROOT.pem] writes a TUF repository for Kyverno's CLI (tuf.go says why)
//
// The registry is go-containerregistry's pkg/registry (the one its own tests use). Signing writes exactly
// cosign's formats with the sigstore/sigstore packages cosign itself signs with, rather than importing
// github.com/sigstore/cosign, whose module graph (Rekor, Fulcio, TUF, cloud KMS clients) would multiply the
// cold build for code these tests never run:
//   - a signature is an image tagged sha256-<hex>.sig in the same repository, one layer per signature of
//     media type application/vnd.dev.cosign.simplesigning.v1+json holding the simple-signing payload
//     (sigstore payload.Cosign), annotated dev.cosignproject.cosign/signature=<base64 signature>
//     (cosign pkg/oci/static, pkg/cosign/verify.go);
//   - an attestation is an image tagged sha256-<hex>.att, one layer per attestation of media type
//     application/vnd.dsse.envelope.v1+json holding a DSSE envelope (payloadType application/vnd.in-toto+json)
//     of an in-toto statement whose subject is the image, annotated predicateType=<type> and an empty
//     dev.cosignproject.cosign/signature (cosign attest, static.NewAttestation).
//
// --tamper changes the payload after signing (so the signature no longer matches it): the "tampered" case.
package main

import (
	"bytes"
	"context"
	"crypto"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/dsse"
	"github.com/sigstore/sigstore/pkg/signature/payload"
)

const (
	simpleSigningMediaType = "application/vnd.dev.cosign.simplesigning.v1+json"
	dsseMediaType          = "application/vnd.dsse.envelope.v1+json"
	signatureAnnotation    = "dev.cosignproject.cosign/signature"
	certificateAnnotation  = "dev.sigstore.cosign/certificate"
	chainAnnotation        = "dev.sigstore.cosign/chain"
	intotoPayloadType      = "application/vnd.in-toto+json"
	intotoStatementType    = "https://in-toto.io/Statement/v0.1"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "push":
		err = push(os.Args[2:])
	case "tuf":
		err = writeTUF(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "registry:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: registry serve | registry push REF [--sign KEY.pem] "+
		"[--cert CERT.pem] [--chain CHAIN.pem] [--attest PREDICATE_TYPE PREDICATE.json --key KEY.pem] [--tamper] "+
		"| registry tuf DIR [--fulcio ROOT.pem]")
	os.Exit(2)
}

// serve runs the registry; with --watch-pid PID it also stops when PID is gone (a test session that ended
// however it ended must not leave a registry behind).
func serve(args []string) error {
	watch := 0
	referrers := true
	if len(args) > 0 && args[len(args)-1] == "--no-referrers" {
		// a registry without the OCI 1.1 referrers API: Notary signatures are found by the tag schema
		referrers = false
		args = args[:len(args)-1]
	}
	if len(args) == 2 && args[0] == "--watch-pid" {
		if _, err := fmt.Sscanf(args[1], "%d", &watch); err != nil {
			return fmt.Errorf("--watch-pid %q: %w", args[1], err)
		}
	} else if len(args) != 0 {
		usage()
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	quiet := log.New(os.Stderr, "registry: ", log.LstdFlags)
	server := &http.Server{Handler: registry.New(registry.Logger(quiet), registry.WithReferrersSupport(referrers)),
		ReadHeaderTimeout: 10 * time.Second}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	if watch > 0 {
		go func() {
			for syscall.Kill(watch, 0) == nil {
				time.Sleep(time.Second)
			}
			stop <- syscall.SIGTERM
		}()
	}
	go func() {
		<-stop
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = server.Shutdown(ctx)
	}()
	fmt.Printf("ready %s\n", listener.Addr().String())
	if err := server.Serve(listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

type pushArgs struct {
	ref                                        string
	signKey, attestType, attestFile, attestKey string
	cert, chain                                string
	notaryChain, notaryKey                     string
	cose, tagSchema                            bool
	expirySeconds                              int
	tamper                                     bool
	referrers                                  []referrerArgs
}

func parsePush(args []string) (pushArgs, error) {
	var out pushArgs
	for i := 0; i < len(args); i++ {
		need := func(n int) error {
			if i+n >= len(args) {
				return fmt.Errorf("%s needs %d argument(s)", args[i], n)
			}
			return nil
		}
		switch args[i] {
		case "--sign":
			if err := need(1); err != nil {
				return out, err
			}
			out.signKey = args[i+1]
			i++
		case "--attest":
			if err := need(2); err != nil {
				return out, err
			}
			out.attestType, out.attestFile = args[i+1], args[i+2]
			i += 2
		case "--key":
			if err := need(1); err != nil {
				return out, err
			}
			out.attestKey = args[i+1]
			i++
		case "--cert", "--chain":
			if err := need(1); err != nil {
				return out, err
			}
			if args[i] == "--cert" {
				out.cert = args[i+1]
			} else {
				out.chain = args[i+1]
			}
			i++
		case "--notary":
			if err := need(2); err != nil {
				return out, err
			}
			out.notaryChain, out.notaryKey = args[i+1], args[i+2]
			i += 2
		case "--expiry":
			if err := need(1); err != nil {
				return out, err
			}
			if _, err := fmt.Sscanf(args[i+1], "%d", &out.expirySeconds); err != nil {
				return out, fmt.Errorf("--expiry %q: %w", args[i+1], err)
			}
			i++
		case "--referrer":
			if err := need(2); err != nil {
				return out, err
			}
			out.referrers = append(out.referrers, referrerArgs{artifactType: args[i+1], payload: args[i+2]})
			i += 2
		case "--referrer-notary":
			if err := need(2); err != nil {
				return out, err
			}
			if len(out.referrers) == 0 {
				return out, errors.New("--referrer-notary follows the --referrer it signs")
			}
			last := &out.referrers[len(out.referrers)-1]
			last.notaryChain, last.notaryKey = args[i+1], args[i+2]
			i += 2
		case "--cose":
			out.cose = true
		case "--tag-schema":
			out.tagSchema = true
		case "--tamper":
			out.tamper = true
		default:
			if out.ref != "" {
				return out, fmt.Errorf("unexpected argument %q", args[i])
			}
			out.ref = args[i]
		}
	}
	if out.ref == "" {
		return out, errors.New("push needs REF")
	}
	if out.attestType != "" && out.attestKey == "" {
		return out, errors.New("--attest needs --key KEY.pem")
	}
	if (out.cert != "" || out.chain != "") && out.signKey == "" {
		return out, errors.New("--cert and --chain need --sign KEY.pem (the certificate's key)")
	}
	if (out.cose || out.expirySeconds != 0) && out.notaryChain == "" {
		return out, errors.New("--cose and --expiry need --notary CHAIN.pem KEY.pem")
	}
	if out.tagSchema && out.notaryChain == "" && len(out.referrers) == 0 {
		return out, errors.New("--tag-schema needs --notary CHAIN.pem KEY.pem or --referrer")
	}
	return out, nil
}

func push(argv []string) error {
	args, err := parsePush(argv)
	if err != nil {
		return err
	}
	// the test registry speaks plain HTTP on loopback
	ref, err := name.ParseReference(args.ref, name.Insecure)
	if err != nil {
		return err
	}
	img, err := random.Image(512, 1)
	if err != nil {
		return err
	}
	if err := remote.Write(ref, img); err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	subject := ref.Context().Digest(digest.String())
	if args.signKey != "" {
		if err := sign(subject, digest, args, args.tamper); err != nil {
			return err
		}
	}
	if args.attestType != "" {
		if err := attest(subject, digest, args.attestType, args.attestFile, args.attestKey, args.tamper); err != nil {
			return err
		}
	}
	if args.notaryChain != "" {
		if err := notarySign(args.ref, digest.String(), args); err != nil {
			return err
		}
	}
	if len(args.referrers) > 0 {
		if err := pushReferrers(args.ref, digest.String(), args); err != nil {
			return err
		}
	}
	fmt.Println(digest.String())
	return nil
}

// loadSigner reads an unencrypted PKCS#8 private key as cosign's LoadPrivateKey ends up using it:
// ECDSA and RSA (PKCS#1 v1.5) with SHA-256, Ed25519 pure.
func loadSigner(path string) (signature.SignerVerifier, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(raw)
	if block == nil {
		return nil, fmt.Errorf("%s: no PEM block", path)
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return signature.LoadSignerVerifier(key, crypto.SHA256)
}

// appendLayer adds one layer to the signature/attestation image at tag (creating it as cosign's empty
// OCI image when absent), as cosign's mutate.AttachSignatureToEntity does.
func appendLayer(tag name.Tag, body []byte, mediaType types.MediaType, annotations map[string]string) error {
	base, err := remote.Image(tag)
	if err != nil {
		base = mutate.MediaType(empty.Image, types.OCIManifestSchema1)
		base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	}
	layer := static.NewLayer(body, mediaType)
	withLayer, err := mutate.Append(base, mutate.Addendum{Layer: layer, Annotations: annotations,
		MediaType: mediaType})
	if err != nil {
		return err
	}
	return remote.Write(tag, withLayer)
}

func sign(subject name.Digest, digest v1.Hash, args pushArgs, tamper bool) error {
	signer, err := loadSigner(args.signKey)
	if err != nil {
		return err
	}
	body, err := payload.Cosign{Image: subject}.MarshalJSON()
	if err != nil {
		return err
	}
	sig, err := signer.SignMessage(bytes.NewReader(body))
	if err != nil {
		return err
	}
	if tamper {
		body = bytes.Replace(body, []byte(`"optional":null`), []byte(`"optional":{"tampered":"yes"}`), 1)
	}
	annotations := map[string]string{signatureAnnotation: base64.StdEncoding.EncodeToString(sig)}
	// keyless-style: the signing key's certificate (and the chain up to the root, root last) as cosign sign
	// stores a Fulcio certificate (static.WithCertChain)
	for _, file := range [][2]string{{args.cert, certificateAnnotation}, {args.chain, chainAnnotation}} {
		if file[0] == "" {
			continue
		}
		pemBytes, err := os.ReadFile(file[0])
		if err != nil {
			return err
		}
		annotations[file[1]] = string(pemBytes)
	}
	tag := subject.Context().Tag(fmt.Sprintf("%s-%s.sig", digest.Algorithm, digest.Hex))
	return appendLayer(tag, body, simpleSigningMediaType, annotations)
}

func attest(subject name.Digest, digest v1.Hash, predicateType, predicatePath, keyPath string, tamper bool) error {
	signer, err := loadSigner(keyPath)
	if err != nil {
		return err
	}
	raw, err := os.ReadFile(predicatePath)
	if err != nil {
		return err
	}
	var predicate any
	if err := json.Unmarshal(raw, &predicate); err != nil {
		return fmt.Errorf("%s: %w", predicatePath, err)
	}
	statement, err := json.Marshal(map[string]any{
		"_type":         intotoStatementType,
		"predicateType": predicateType,
		"subject": []map[string]any{{
			"name":   subject.Context().Name(),
			"digest": map[string]string{digest.Algorithm: digest.Hex},
		}},
		"predicate": predicate,
	})
	if err != nil {
		return err
	}
	envelope, err := dsse.WrapSigner(signer, intotoPayloadType).SignMessage(bytes.NewReader(statement))
	if err != nil {
		return err
	}
	if tamper {
		var env map[string]any
		if err := json.Unmarshal(envelope, &env); err != nil {
			return err
		}
		changed := bytes.Replace(statement, []byte(`"predicate":`), []byte(`"tampered":true,"predicate":`), 1)
		env["payload"] = base64.StdEncoding.EncodeToString(changed)
		if envelope, err = json.Marshal(env); err != nil {
			return err
		}
	}
	tag := subject.Context().Tag(fmt.Sprintf("%s-%s.att", digest.Algorithm, digest.Hex))
	// cosign's static.NewAttestation: the signature annotation is there, empty (the signature is in the
	// envelope); cosign's verifier refuses a layer without it
	return appendLayer(tag, envelope, dsseMediaType,
		map[string]string{"predicateType": predicateType, signatureAnnotation: ""})
}
