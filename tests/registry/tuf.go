package main

// registry tuf DIR [--fulcio ROOT.pem]: a TUF repository in DIR for Kyverno's CLI, the oracle of the
// registry tests: empty (no targets), or with --fulcio holding ROOT.pem as Sigstore's Fulcio root
// (`fulcio_v1.crt.pem`, custom metadata usage Fulcio, what sigstore's fulcioroots reads) and a
// `trusted_root.json` naming it as the only certificate authority (what Kyverno's keyless verification
// checks a signing certificate's chain against: kk imageverifiers/cosign/opts.go getTrustedRootFromTUF).
//
// Kyverno's cosign verifier initializes sigstore's TUF client before every verification, keys included, and
// that client always contacts its mirror (kk: pkg/imageverification/imageverifiers/cosign/opts.go
// initializeTuf; sigstore pkg/tuf Initialize forces an update). With no network the public mirror fails and
// every image counts as unsigned, so the oracle's policies name this repository instead
// (`tuf: {mirror: file://DIR/repository, root: {path: DIR/repository/root.json}}`). It holds no targets: the
// policies give their keys (and the transparency-log keys they never use) inline. Written with go-tuf v0.7,
// the TUF client sigstore's pkg/tuf reads it with; keys unencrypted, every role expiring in ten years.

import (
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"time"

	tuf "github.com/theupdateframework/go-tuf"
)

func writeTUF(args []string) error {
	fulcio := ""
	if len(args) == 3 && args[1] == "--fulcio" {
		fulcio, args = args[2], args[:1]
	}
	if len(args) != 1 {
		return fmt.Errorf("tuf needs DIR [--fulcio ROOT.pem]")
	}
	repo, err := tuf.NewRepo(tuf.FileSystemStore(args[0], nil))
	if err != nil {
		return err
	}
	if err := repo.Init(false); err != nil {
		return err
	}
	expires := time.Now().AddDate(10, 0, 0).UTC().Round(time.Second)
	for _, role := range []string{"root", "targets", "snapshot", "timestamp"} {
		if _, err := repo.GenKeyWithExpires(role, expires); err != nil {
			return err
		}
	}
	if fulcio == "" {
		if err := repo.AddTargetsWithExpires(nil, nil, expires); err != nil {
			return err
		}
	} else if err := addFulcio(repo, args[0], fulcio, expires); err != nil {
		return err
	}
	if err := repo.SnapshotWithExpires(expires); err != nil {
		return err
	}
	if err := repo.TimestampWithExpires(expires); err != nil {
		return err
	}
	if err := repo.Commit(); err != nil {
		return err
	}
	// sigstore's client opens the mirror's targets/ directory even when there is nothing to download
	return os.MkdirAll(filepath.Join(args[0], "repository", "targets"), 0o755)
}

// addFulcio stages ROOT.pem as the Fulcio root and a trusted root (Sigstore's protobuf-specs TrustedRoot, JSON)
// with it as the only certificate authority, and adds both as targets.
func addFulcio(repo *tuf.Repo, dir, rootPEM string, expires time.Time) error {
	raw, err := os.ReadFile(rootPEM)
	if err != nil {
		return err
	}
	block, _ := pem.Decode(raw)
	if block == nil {
		return fmt.Errorf("%s: no PEM block", rootPEM)
	}
	trusted := map[string]any{
		"mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
		"tlogs":     []any{},
		"certificateAuthorities": []any{map[string]any{
			"subject":   map[string]any{"organization": "kyrec", "commonName": "kyrec test CA"},
			"uri":       "https://fulcio.invalid",
			"certChain": map[string]any{"certificates": []any{map[string]any{"rawBytes": base64.StdEncoding.EncodeToString(block.Bytes)}}},
			"validFor":  map[string]any{"start": "2000-01-01T00:00:00Z"},
		}},
		"ctlogs":               []any{},
		"timestampAuthorities": []any{},
	}
	body, err := json.Marshal(trusted)
	if err != nil {
		return err
	}
	staged := filepath.Join(dir, "staged", "targets")
	if err := os.MkdirAll(staged, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(staged, "fulcio_v1.crt.pem"), raw, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(staged, "trusted_root.json"), body, 0o644); err != nil {
		return err
	}
	usage := json.RawMessage(`{"sigstore":{"usage":"Fulcio","status":"Active"}}`)
	if err := repo.AddTargetsWithExpires([]string{"fulcio_v1.crt.pem"}, usage, expires); err != nil {
		return err
	}
	return repo.AddTargetsWithExpires([]string{"trusted_root.json"}, nil, expires)
}
