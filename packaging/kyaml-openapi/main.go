// Dumps the structure kyaml's merge2 reads from its built-in Kubernetes OpenAPI (v1.21.2):
// per definition: type, properties, items, additionalProperties, $ref, the patch extensions, the GVKs.
package main

import (
	"encoding/json"
	"os"
	"sort"

	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/kustomize/kyaml/openapi"
)

func compact(s *spec.Schema) map[string]interface{} {
	out := map[string]interface{}{}
	if r := s.Ref.String(); r != "" {
		out["$ref"] = r
	}
	if len(s.Type) > 0 {
		out["type"] = []string(s.Type)
	}
	if len(s.Properties) > 0 {
		props := map[string]interface{}{}
		for k, v := range s.Properties {
			v := v
			props[k] = compact(&v)
		}
		out["properties"] = props
	}
	if s.Items != nil && s.Items.Schema != nil {
		out["items"] = compact(s.Items.Schema)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		out["additionalProperties"] = compact(s.AdditionalProperties.Schema)
	}
	for _, k := range []string{"x-kubernetes-patch-strategy", "x-kubernetes-patch-merge-key", "x-kubernetes-list-map-keys", "x-kubernetes-group-version-kind"} {
		if v, ok := s.Extensions[k]; ok {
			out[k] = v
		}
	}
	return out
}

func main() {
	root := openapi.Schema()
	defs := map[string]interface{}{}
	names := []string{}
	for k := range root.Definitions {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		d := root.Definitions[k]
		defs[k] = compact(&d)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "")
	_ = enc.Encode(map[string]interface{}{"version": openapi.GetSchemaVersion(), "definitions": defs})
}
