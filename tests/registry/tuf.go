package main

// registry tuf DIR: an empty TUF repository (no targets) in DIR for Kyverno's CLI, the oracle of the
// registry tests.
//
// Kyverno's cosign verifier initializes sigstore's TUF client before every verification, keys included, and
// that client always contacts its mirror (kk: pkg/imageverification/imageverifiers/cosign/opts.go
// initializeTuf; sigstore pkg/tuf Initialize forces an update). With no network the public mirror fails and
// every image counts as unsigned, so the oracle's policies name this repository instead
// (`tuf: {mirror: file://DIR/repository, root: {path: DIR/repository/root.json}}`). It holds no targets: the
// policies give their keys (and the transparency-log keys they never use) inline. Written with go-tuf v0.7,
// the TUF client sigstore's pkg/tuf reads it with; keys unencrypted, every role expiring in ten years.

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	tuf "github.com/theupdateframework/go-tuf"
)

func writeTUF(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("tuf needs DIR")
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
	if err := repo.AddTargetsWithExpires(nil, nil, expires); err != nil {
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
