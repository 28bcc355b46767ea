package configmap

import (
	"context"
	"encoding/json"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/limbo-dev/limbo/pkg/plugin"
)

// Name is the plugin's registered name.
const Name = "configmap"

// Spec is the plugin's input.
type Spec struct {
	// Name of the generated ConfigMap.
	Name string `json:"name" schema:"minLength=1"`
	// Data are the ConfigMap's entries.
	Data map[string]string `json:"data,omitempty"`
	// Prefix is prepended to every key.
	Prefix string `json:"prefix,omitempty"`
}

// Plugin generates a ConfigMap.
type Plugin struct{}

// New returns the plugin.
func New() *Plugin { return &Plugin{} }

// Describe names the plugin and its schema, generated from Spec.
func (*Plugin) Describe() plugin.Description {
	return plugin.Description{Name: Name, Schema: plugin.SchemaOf[Spec]()}
}

// Plan returns the ConfigMap. It is pure and deterministic: keys are sorted.
func (*Plugin) Plan(_ context.Context, req plugin.Request) (*plugin.Result, error) {
	var spec Spec
	if err := json.Unmarshal(req.Spec, &spec); err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(spec.Data))
	for k := range spec.Data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	data := map[string]any{}
	for _, k := range keys {
		data[spec.Prefix+k] = spec.Data[k]
	}
	cm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": spec.Name},
		"data":     data,
	}}
	return &plugin.Result{Objects: []*unstructured.Unstructured{cm}, Ready: true}, nil
}
