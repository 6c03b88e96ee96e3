// realapi runs a real kube-apiserver (k8s.io/kubernetes, pinned in go.mod) with an embedded etcd in one
// process, on loopback only, for kyrec's tests: the semantics kyrec relies on (server-side apply,
// managedFields, conflicts, preconditions, pagination, discovery, CRD pruning, RBAC) come from Kubernetes
// itself instead of from our double.
//
//	realapi serve --kubeconfig FILE [--crds DIR]... [--log FILE] [SEED.yaml ...]
//	    start, install the CRDs, apply the seeds, write the kubeconfig, print "ready", serve until SIGTERM
//	realapi seed --kubeconfig FILE SEED.yaml ...
//	    apply seed objects to a running server (the same code serve uses, so tests seed the same way)
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: realapi serve|seed --kubeconfig FILE ...")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serveMain(os.Args[2:])
	case "seed":
		err = seedMain(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q (serve or seed)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "realapi:", err)
		os.Exit(1)
	}
}
