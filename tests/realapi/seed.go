package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
)

type restConfig = rest.Config

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

func seedMain(args []string) error {
	fs := flag.NewFlagSet("seed", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "the server's kubeconfig (its current context is used)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *kubeconfig == "" {
		return errors.New("--kubeconfig is required")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 500, 1000
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	return seedFiles(ctx, cfg, fs.Args())
}

// readObjects reads every YAML or JSON document of a file (a "-" reads stdin), expanding v1 Lists.
func readObjects(path string) ([]*unstructured.Unstructured, error) {
	var r io.Reader
	if path == "-" {
		r = os.Stdin
	} else {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		r = bytes.NewReader(data)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
	var out []*unstructured.Unstructured
	for {
		var doc map[string]interface{}
		if err := dec.Decode(&doc); err != nil {
			if err == io.EOF {
				return out, nil
			}
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(doc) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: doc}
		if u.IsList() {
			if err := u.EachListItem(func(o runtime.Object) error {
				out = append(out, o.(*unstructured.Unstructured))
				return nil
			}); err != nil {
				return nil, err
			}
			continue
		}
		out = append(out, u)
	}
}

type applier struct {
	dyn    dynamic.Interface
	disco  discovery.CachedDiscoveryInterface
	mapper *restmapper.DeferredDiscoveryRESTMapper
	// the resources that have a status subresource, by group/version, from discovery
	statusOf map[schema.GroupVersion]map[string]bool
}

func newApplier(cfg *rest.Config) (*applier, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	cached := memory.NewMemCacheClient(dc)
	return &applier{
		dyn: dyn, disco: cached, mapper: restmapper.NewDeferredDiscoveryRESTMapper(cached),
		statusOf: map[schema.GroupVersion]map[string]bool{},
	}, nil
}

// seedFiles applies every object of the files: Namespaces and CRDs first (the rest may live in them), then
// in file order.
func seedFiles(ctx context.Context, cfg *rest.Config, paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	var objs []*unstructured.Unstructured
	for _, p := range paths {
		o, err := readObjects(p)
		if err != nil {
			return err
		}
		objs = append(objs, o...)
	}
	rank := func(u *unstructured.Unstructured) int {
		switch u.GroupVersionKind().GroupKind() {
		case schema.GroupKind{Kind: "Namespace"}:
			return 0
		case schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}:
			return 1
		}
		return 2
	}
	sort.SliceStable(objs, func(i, j int) bool { return rank(objs[i]) < rank(objs[j]) })
	a, err := newApplier(cfg)
	if err != nil {
		return err
	}
	var crds []string
	for _, o := range objs {
		if rank(o) == 2 && len(crds) > 0 {
			if err := waitEstablished(ctx, a.dyn, crds); err != nil {
				return err
			}
			crds = nil
			a.mapper.Reset()
		}
		if err := a.apply(ctx, o); err != nil {
			return err
		}
		if rank(o) == 1 {
			crds = append(crds, o.GetName())
		}
	}
	return waitEstablished(ctx, a.dyn, crds)
}

// apply server-side applies one seed object as the manager its first managedFields entry names (default
// kubectl, as `kubectl apply --server-side` would), then its status through the status subresource where the
// resource has one (the main endpoint ignores status there).
func (a *applier) apply(ctx context.Context, in *unstructured.Unstructured) error {
	o := in.DeepCopy()
	manager := "kubectl"
	if mf := o.GetManagedFields(); len(mf) > 0 && mf[0].Manager != "" {
		manager = mf[0].Manager
	}
	// What the server owns: an apply body may not carry them (resourceVersion would even make it a
	// precondition that cannot hold on a fresh server).
	for _, f := range []string{"managedFields", "resourceVersion", "uid", "creationTimestamp", "generation",
		"selfLink", "deletionTimestamp", "deletionGracePeriodSeconds"} {
		unstructured.RemoveNestedField(o.Object, "metadata", f)
	}
	gvk := o.GroupVersionKind()
	var mapping *meta.RESTMapping
	var err error
	// A kind just made by a CRD of the same seed may take a moment to appear in discovery: bounded retries.
	for i := 0; i < 50; i++ {
		mapping, err = a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err == nil || !meta.IsNoMatchError(err) {
			break
		}
		a.mapper.Reset()
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", gvk, o.GetName(), err)
	}
	var ri dynamic.ResourceInterface = a.dyn.Resource(mapping.Resource)
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		if o.GetNamespace() == "" {
			o.SetNamespace("default")
		}
		ri = a.dyn.Resource(mapping.Resource).Namespace(o.GetNamespace())
	} else {
		o.SetNamespace("")
	}
	status, hasStatus := o.Object["status"]
	subresource := hasStatus && a.hasStatusSubresource(mapping.Resource)
	if subresource {
		delete(o.Object, "status")
	}
	// Force: a seed states what the server should hold; a conflict with an earlier seed's manager is the
	// seed author's intent, not an error.
	opts := metav1.ApplyOptions{FieldManager: manager, Force: true}
	if _, err := ri.Apply(ctx, o.GetName(), o, opts); err != nil {
		return fmt.Errorf("apply %s %s/%s as %s: %w", gvk.Kind, o.GetNamespace(), o.GetName(), manager, err)
	}
	if subresource {
		s := &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": o.GetAPIVersion(), "kind": o.GetKind(),
			"metadata": map[string]interface{}{"name": o.GetName(), "namespace": o.GetNamespace()},
			"status":   status,
		}}
		if o.GetNamespace() == "" {
			unstructured.RemoveNestedField(s.Object, "metadata", "namespace")
		}
		if _, err := ri.ApplyStatus(ctx, o.GetName(), s, opts); err != nil {
			return fmt.Errorf("apply status of %s %s/%s as %s: %w", gvk.Kind, o.GetNamespace(), o.GetName(), manager, err)
		}
	}
	return nil
}

func (a *applier) hasStatusSubresource(gvr schema.GroupVersionResource) bool {
	gv := gvr.GroupVersion()
	known, ok := a.statusOf[gv]
	if !ok {
		known = map[string]bool{}
		if list, err := a.disco.ServerResourcesForGroupVersion(gv.String()); err == nil {
			for _, r := range list.APIResources {
				if base, sub, found := strings.Cut(r.Name, "/"); found && sub == "status" {
					known[base] = true
				}
			}
		}
		a.statusOf[gv] = known
	}
	return known[gvr.Resource]
}

// installCRDs applies every CRD file of a folder (read in place) and waits until each is established and
// served in discovery, so a test's first request finds the kinds.
func installCRDs(ctx context.Context, cfg *rest.Config, dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var paths []string
	for _, e := range entries {
		n := e.Name()
		if !e.IsDir() && (strings.HasSuffix(n, ".yaml") || strings.HasSuffix(n, ".yml") || strings.HasSuffix(n, ".json")) {
			paths = append(paths, filepath.Join(dir, n))
		}
	}
	if len(paths) == 0 {
		return fmt.Errorf("no CRD files in %s", dir)
	}
	a, err := newApplier(cfg)
	if err != nil {
		return err
	}
	var names []string
	var served []*unstructured.Unstructured
	for _, p := range paths {
		objs, err := readObjects(p)
		if err != nil {
			return err
		}
		for _, o := range objs {
			if o.GroupVersionKind().GroupKind() != (schema.GroupKind{Group: crdGVR.Group, Kind: "CustomResourceDefinition"}) {
				return fmt.Errorf("%s: %s is not a CustomResourceDefinition", p, o.GetKind())
			}
			if err := a.apply(ctx, o); err != nil {
				return err
			}
			names = append(names, o.GetName())
			served = append(served, o)
		}
	}
	if err := waitEstablished(ctx, a.dyn, names); err != nil {
		return err
	}
	return waitDiscovery(ctx, cfg, served)
}

func waitEstablished(ctx context.Context, dyn dynamic.Interface, names []string) error {
	deadline := time.Now().Add(time.Minute)
	for _, name := range names {
		for {
			crd, err := dyn.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				return err
			}
			if err == nil && conditionTrue(crd, "Established") {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("CRD %s not established within a minute", name)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}

func conditionTrue(u *unstructured.Unstructured, kind string) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]interface{})
		if ok && m["type"] == kind && m["status"] == "True" {
			return true
		}
	}
	return false
}

// waitDiscovery waits until every served version of each CRD is listed by discovery: Established says the
// handler serves, discovery catches up a moment later, and kyrec starts with discovery.
func waitDiscovery(ctx context.Context, cfg *rest.Config, crds []*unstructured.Unstructured) error {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(time.Minute)
	for {
		missing := ""
		_, lists, err := dc.ServerGroupsAndResources()
		if err == nil {
			have := map[string]bool{}
			for _, l := range lists {
				for _, r := range l.APIResources {
					have[l.GroupVersion+"/"+r.Name] = true
				}
			}
			for _, c := range crds {
				group, _, _ := unstructured.NestedString(c.Object, "spec", "group")
				plural, _, _ := unstructured.NestedString(c.Object, "spec", "names", "plural")
				versions, _, _ := unstructured.NestedSlice(c.Object, "spec", "versions")
				for _, v := range versions {
					vm, _ := v.(map[string]interface{})
					if served, _ := vm["served"].(bool); !served {
						continue
					}
					key := fmt.Sprintf("%s/%v/%s", group, vm["name"], plural)
					if !have[key] {
						missing = key
					}
				}
			}
			if missing == "" {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("discovery does not list %s within a minute (last error: %v)", missing, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
