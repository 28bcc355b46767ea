package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	k8svalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/limbo-dev/limbo/pkg/bundlespec"
)

// Registry holds the compiled-in plugins by name. It is the bundlespec.PluginCatalog
// the Bundle reconciler validates plugin resources with.
type Registry struct {
	plugins    map[string]Plugin
	validators map[string]*specValidator
}

// NewRegistry registers plugins; a duplicate name or a broken schema is an error.
func NewRegistry(plugins ...Plugin) (*Registry, error) {
	r := &Registry{plugins: map[string]Plugin{}, validators: map[string]*specValidator{}}
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
		if err := checkSchema(field.NewPath("spec"), d.Schema); err != nil {
			return fmt.Errorf("plugin %q schema: %w", d.Name, err)
		}
		v, err := newSpecValidator(d.Schema)
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

// ForgetBundle tells every plugin that keeps state per Bundle resource (a
// Forgetter) that the Bundle whose UID is uid is gone.
func (r *Registry) ForgetBundle(uid types.UID) {
	if r == nil {
		return
	}
	for _, p := range r.plugins {
		if f, ok := p.(Forgetter); ok {
			f.ForgetBundle(uid)
		}
	}
}

// ForgetResource tells every ResourceForgetter that the resource named resource
// of the Bundle whose UID is uid is gone.
func (r *Registry) ForgetResource(uid types.UID, resource string) {
	if r == nil {
		return
	}
	for _, p := range r.plugins {
		if f, ok := p.(ResourceForgetter); ok {
			f.ForgetResource(uid, resource)
		}
	}
}

// Names lists the registered plugins, sorted.
func (r *Registry) Names() []string {
	if r == nil {
		return nil
	}
	var names []string
	for n := range r.plugins {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// UnknownPlugin is the error of a plugin resource naming a plugin r lacks: it
// wraps bundlespec.ErrUnknownPlugin and lists the names r has, sorted, so that a
// typo (namespace_gc) is seen next to the name meant:
//
//	unknown plugin "namespace_gc" (known: configmap, deorbit, namespace-gc, node-removal, route-gc)
func (r *Registry) UnknownPlugin(name string) error {
	names := r.Names()
	if len(names) == 0 {
		return fmt.Errorf("%w %q (no plugins are registered)", bundlespec.ErrUnknownPlugin, name)
	}
	return fmt.Errorf("%w %q (known: %s)", bundlespec.ErrUnknownPlugin, name, strings.Join(names, ", "))
}

// ValidateSpec checks spec against the schema of the plugin named name, then
// with the plugin's own check (SpecChecker). unresolved are the fields of spec
// whose reference markers still wait for their values (a Bundle validated before
// its dependencies are Ready): their schema errors are not reported, and the
// plugin's own check, which parses values, waits for the pass that validates the
// spec again with the values in place (nil there).
func (r *Registry) ValidateSpec(name string, spec *apiextensionsv1.JSON, unresolved []string) error {
	p, ok := r.Get(name)
	if !ok {
		return r.UnknownPlugin(name)
	}
	raw := []byte("{}")
	if spec != nil && len(spec.Raw) > 0 {
		raw = spec.Raw
	}
	v, hasSchema := r.validators[name]
	checker, hasCheck := p.(SpecChecker)
	if !hasSchema && !hasCheck {
		return nil
	}
	var value any
	if err := json.Unmarshal(raw, &value); err != nil {
		return fmt.Errorf("spec: %w", err)
	}
	if hasSchema {
		if errs := withoutFields(v.validate(field.NewPath("spec"), value), unresolved); len(errs) > 0 {
			return errs.ToAggregate()
		}
	}
	if !hasCheck || len(unresolved) > 0 {
		return nil
	}
	// The plugin's code, recovered as its other calls are: a panic (a nil
	// pointer of a field the spec omits) is the spec's error, shown on the
	// Bundle, rather than the end of the pass, or of the teardown, that parses
	// the spec. ValidateSpec has no context: the panic is logged through the
	// controller's root logger.
	var err error
	if perr := Recover(context.Background(), func() { err = checker.CheckSpec(raw) }); perr != nil {
		err = perr
	}
	return specCheckError(err)
}

// withoutFields drops from errs those of fields.
func withoutFields(errs field.ErrorList, fields []string) field.ErrorList {
	if len(fields) == 0 {
		return errs
	}
	var kept field.ErrorList
	for _, e := range errs {
		if !slices.Contains(fields, e.Field) {
			kept = append(kept, e)
		}
	}
	return kept
}

// specCheckError gives a CheckSpec error the shape of the schema's errors, an
// aggregate of field errors, so that the Bundle validator and the user read both
// alike.
func specCheckError(err error) error {
	var agg utilerrors.Aggregate
	var fe *field.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &agg):
		errs := make(field.ErrorList, 0, len(agg.Errors()))
		for _, e := range agg.Errors() {
			if !errors.As(e, &fe) {
				return agg // not the plugin's field errors: as it is
			}
			errs = append(errs, fe)
		}
		sortErrors(errs)
		return errs.ToAggregate()
	case errors.As(err, &fe):
		return field.ErrorList{fe}.ToAggregate()
	}
	return field.ErrorList{field.Invalid(field.NewPath("spec"), field.OmitValueType{}, err.Error())}.ToAggregate()
}

// Watches returns a prototype of every kind some plugin watches, with the names of
// the plugins that watch it.
func (r *Registry) Watches() []Watch {
	var out []Watch
	byType := map[string]int{}
	for _, name := range r.Names() {
		for _, proto := range r.plugins[name].Describe().Watches {
			key := fmt.Sprintf("%T %s", proto, proto.GetObjectKind().GroupVersionKind())
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

// GVK is the kind of w's prototype (empty if scheme does not know a typed one).
func (w Watch) GVK(scheme *runtime.Scheme) schema.GroupVersionKind {
	gvk, _ := apiutil.GVKForObject(w.Object, scheme)
	return gvk
}

// ServedWatches splits Watches into the kinds the API server serves and those it
// does not (a CRD not installed). Only served kinds can be cached and watched:
// controller-runtime fails the cache's construction, and the controller's start
// after its sync timeout, on a kind without a REST mapping.
func (r *Registry) ServedWatches(scheme *runtime.Scheme, mapper meta.RESTMapper) (served, missing []Watch) {
	for _, w := range r.Watches() {
		gvk, err := apiutil.GVKForObject(w.Object, scheme)
		if err == nil {
			_, err = mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		}
		if err != nil {
			missing = append(missing, w)
			continue
		}
		served = append(served, w)
	}
	return served, missing
}

// checkSchema rejects what the validator would only notice on a user's spec: a
// pattern that is no regular expression, and CEL rules, which plugin specs do not
// evaluate.
func checkSchema(path *field.Path, s *apiextensionsv1.JSONSchemaProps) error {
	if s == nil {
		return nil
	}
	if s.Pattern != "" {
		if _, err := regexp.Compile(s.Pattern); err != nil {
			return fmt.Errorf("%s.pattern: %w", path, err)
		}
	}
	if len(s.XValidations) > 0 {
		return fmt.Errorf("%s.x-kubernetes-validations: CEL rules are not evaluated for plugin specs", path)
	}
	children := map[string]*apiextensionsv1.JSONSchemaProps{}
	for name, p := range s.Properties {
		children["properties["+name+"]"] = &p
	}
	if s.Items != nil {
		children["items"] = s.Items.Schema
	}
	if s.AdditionalProperties != nil {
		children["additionalProperties"] = s.AdditionalProperties.Schema
	}
	for i := range s.AllOf {
		children[fmt.Sprintf("allOf[%d]", i)] = &s.AllOf[i]
	}
	for i := range s.AnyOf {
		children[fmt.Sprintf("anyOf[%d]", i)] = &s.AnyOf[i]
	}
	for i := range s.OneOf {
		children[fmt.Sprintf("oneOf[%d]", i)] = &s.OneOf[i]
	}
	names := make([]string, 0, len(children))
	for n := range children {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := checkSchema(path.Child(n), children[n]); err != nil {
			return err
		}
	}
	return nil
}
