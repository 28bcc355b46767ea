package plugin

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	k8svalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/pkg/bundlespec"
)

// Registry holds the compiled-in plugins by name. It is the bundlespec.PluginCatalog
// the Bundle reconciler validates plugin resources with.
type Registry struct {
	plugins    map[string]Plugin
	validators map[string]validation.SchemaValidator
}

// NewRegistry registers plugins; a duplicate name or a broken schema is an error.
func NewRegistry(plugins ...Plugin) (*Registry, error) {
	r := &Registry{plugins: map[string]Plugin{}, validators: map[string]validation.SchemaValidator{}}
	for _, p := range plugins {
		if err := r.Register(p); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Register adds p.
func (r *Registry) Register(p Plugin) error {
	d := p.Describe()
	if msgs := k8svalidation.IsDNS1123Label(d.Name); len(msgs) > 0 {
		return fmt.Errorf("plugin name %q: %s", d.Name, strings.Join(msgs, "; "))
	}
	if _, dup := r.plugins[d.Name]; dup {
		return fmt.Errorf("plugin %q registered twice", d.Name)
	}
	if d.Schema != nil {
		internal := &apiextensions.JSONSchemaProps{}
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(d.Schema, internal, nil); err != nil {
			return fmt.Errorf("plugin %q schema: %w", d.Name, err)
		}
		v, _, err := validation.NewSchemaValidator(internal)
		if err != nil {
			return fmt.Errorf("plugin %q schema: %w", d.Name, err)
		}
		r.validators[d.Name] = v
	}
	r.plugins[d.Name] = p
	return nil
}

// Get returns the plugin named name.
func (r *Registry) Get(name string) (Plugin, bool) {
	if r == nil {
		return nil, false
	}
	p, ok := r.plugins[name]
	return p, ok
}

// Names lists the registered plugins, sorted.
func (r *Registry) Names() []string {
	var names []string
	for n := range r.plugins {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ValidateSpec checks spec against the schema of the plugin named name.
func (r *Registry) ValidateSpec(name string, spec *apiextensionsv1.JSON) error {
	if _, ok := r.Get(name); !ok {
		return fmt.Errorf("%w %q (known: %s)", bundlespec.ErrUnknownPlugin, name, strings.Join(r.Names(), ", "))
	}
	v, ok := r.validators[name]
	if !ok {
		return nil
	}
	var value any = map[string]any{}
	if spec != nil && len(spec.Raw) > 0 {
		if err := json.Unmarshal(spec.Raw, &value); err != nil {
			return fmt.Errorf("spec: %w", err)
		}
	}
	if errs := validation.ValidateCustomResource(field.NewPath("spec"), value, v); len(errs) > 0 {
		return errs.ToAggregate()
	}
	return nil
}

// Watches returns a prototype of every kind some plugin watches, with the names of
// the plugins that watch it.
func (r *Registry) Watches() []Watch {
	var out []Watch
	byType := map[string]int{}
	for _, name := range r.Names() {
		for _, proto := range r.plugins[name].Describe().Watches {
			key := fmt.Sprintf("%T", proto)
			if i, ok := byType[key]; ok {
				out[i].Plugins = append(out[i].Plugins, name)
				continue
			}
			byType[key] = len(out)
			out = append(out, Watch{Object: proto, Plugins: []string{name}})
		}
	}
	return out
}

// Watch is a kind watched for plugins.
type Watch struct {
	Object  client.Object
	Plugins []string
}
