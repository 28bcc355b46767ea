package bundlespec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/boundedtext"
	"github.com/limbo-dev/limbo/pkg/fieldpath"
	"github.com/limbo-dev/limbo/pkg/graph"
	"github.com/limbo-dev/limbo/pkg/reference"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

// ErrUnknownPlugin is returned (wrapped) by a PluginCatalog for a name it lacks.
var ErrUnknownPlugin = errors.New("unknown plugin")

// PluginCatalog validates plugin resources against the compiled-in plugins.
type PluginCatalog interface {
	// ValidateSpec returns an error wrapping ErrUnknownPlugin for an unknown name
	// (its text is the resource's message: `unknown plugin "x" (known: a, b)`),
	// or the schema violations of spec, but those of the unresolved fields
	// (whose markers wait for their values).
	ValidateSpec(name string, spec *apiextensionsv1.JSON, unresolved []string) error
}

// Error is one thing wrong with a Bundle's spec.
type Error struct {
	// Resource is the offending resource's name.
	Resource string
	// Reason is a CamelCase reason, one of the Reason constants.
	Reason string
	// Message says what is wrong.
	Message string
}

func (e Error) Error() string { return fmt.Sprintf("resource %q: %s", e.Resource, e.Message) }

// Errors is a Bundle's spec errors, in declaration order of the resources.
type Errors []Error

// Error joins the errors with "; ", bounded by JoinBounded: the text goes into
// the Bundle's conditions and its InvalidSpec event, and a spec can have
// thousands of errors.
func (es Errors) Error() string {
	return JoinBounded(es.Messages(), "; ")
}

// Has reports whether one of the errors has reason.
func (es Errors) Has(reason string) bool {
	return slices.ContainsFunc(es, func(e Error) bool { return e.Reason == reason })
}

// Messages are the errors' texts, one each.
func (es Errors) Messages() []string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	return msgs
}

// MessageBudget is the most bytes JoinBounded returns: well under the 32768
// characters the API allows a condition's message (metav1.Condition), leaving
// room for a prefix, and small enough for an event.
const MessageBudget = 8192

// JoinBounded joins items with sep within MessageBudget bytes
// (boundedtext.Join: the first items that fit, then "… and N more"). Every
// condition message built from a list (spec errors, resource problems, what a
// teardown waits for, its failures) goes through it: an unbounded one made every
// status write of the Bundle fail.
func JoinBounded(items []string, sep string) string {
	return boundedtext.Join(items, sep, MessageBudget)
}

// Bound is s within MessageBudget bytes (boundedtext.Cut): for a single message
// from outside, such as an error that carries what an endpoint answered.
func Bound(s string) string { return boundedtext.Cut(s, MessageBudget) }

// listBudget bounds a list within one Error's message (the undeclared markers
// of a resource): a quarter of MessageBudget, so that the Error, with its
// resource's name, fits whole in a message JoinBounded joins.
const listBudget = MessageBudget / 4

// Resource is one validated resource.
type Resource struct {
	limbov1alpha1.Resource
	// Template is the declared object with its namespace defaulted (object resources).
	Template *unstructured.Unstructured
	// GVK is the template's kind.
	GVK schema.GroupVersionKind
	// Adopt reports limbo.dev/adopt: "true" on the template.
	Adopt bool
}

// ObjectKey names an object among a Bundle's: its kind's group and kind
// (StoredKind) and its name (a Bundle's objects are in its namespace).
func ObjectKey(gk schema.GroupKind, name string) string { return ObjectIDOf(gk, name).String() }

// sameObjects maps a kind the API server serves under a second group to its
// first: both groups serve the same stored objects.
var sameObjects = map[schema.GroupKind]schema.GroupKind{
	{Group: "events.k8s.io", Kind: "Event"}: {Kind: "Event"},
}

// StoredKind is the group and kind limbo knows gk's objects by: gk, or, for a
// kind served under two groups (core and events.k8s.io Events), the first. An
// Event declared under one group and listed under the other is one object: by
// their own groups, it was an orphan of itself, deleted and created again.
func StoredKind(gk schema.GroupKind) schema.GroupKind {
	if first, ok := sameObjects[gk]; ok {
		return first
	}
	return gk
}

// ObjectKey is the ObjectKey of r's template ("" for a plugin resource).
func (r *Resource) ObjectKey() string {
	if r.Template == nil {
		return ""
	}
	return ObjectKey(r.GVK.GroupKind(), r.Template.GetName())
}

// Header is what a resource's template says of the object it stands for: its
// kind, its name and its annotations, read without the rest of the template and
// without validating it (Parse does).
type Header struct {
	GVK         schema.GroupVersionKind
	Name        string
	Annotations map[string]string
}

// HeaderOf reads the header of res's template: ok is false for a plugin
// resource, err set for a template that does not decode.
func HeaderOf(res limbov1alpha1.Resource) (h Header, ok bool, err error) {
	if res.Object == nil {
		return Header{}, false, nil
	}
	var tmpl struct {
		metav1.TypeMeta `json:",inline"`
		Metadata        struct {
			Name        string            `json:"name"`
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(res.Object.Raw, &tmpl); err != nil {
		return Header{}, true, err
	}
	return Header{GVK: tmpl.GroupVersionKind(), Name: tmpl.Metadata.Name, Annotations: tmpl.Metadata.Annotations}, true, nil
}

// Declaration is how a Bundle's templates name an object.
type Declaration int

const (
	NotDeclared Declaration = iota
	// DeclaredOnly: a template names it (or one cannot be read: the Bundle's spec
	// is then invalid, and nothing is deleted on its account).
	DeclaredOnly
	// DeclaredToAdopt: a template names it and is annotated limbo.dev/adopt.
	DeclaredToAdopt
)

// Declares is Declarations.Declares of b's templates, for one object (a
// lookup of many reads them once: DeclarationsOf).
func Declares(b *limbov1alpha1.Bundle, gk schema.GroupKind, name string) Declaration {
	return DeclarationsOf(b).Declares(gk, name)
}

// DeclaresReadably is Declarations.DeclaresReadably of b's templates, for one
// object.
func DeclaresReadably(b *limbov1alpha1.Bundle, gk schema.GroupKind, name string) (Declaration, error) {
	return DeclarationsOf(b).DeclaresReadably(gk, name)
}

// DeclaredDelay is Declarations.Delay of b's spec, for one object.
func DeclaredDelay(b *limbov1alpha1.Bundle, gk schema.GroupKind, obj metav1.Object) string {
	return DeclarationsOf(b).Delay(gk, obj)
}

// Adopter is the first of bundles, other than the one named except and not being
// deleted, that declares the object of kind gk named name to adopt it
// (limbo.dev/adopt); nil when none does. A Bundle being deleted never adopts.
// The lookup scans every Bundle of a namespace (the reaper's, at each due
// released object; a sharded pass's, at each orphan): only a Bundle whose
// templates mention the annotation is decoded.
func Adopter(bundles []limbov1alpha1.Bundle, gk schema.GroupKind, name, except string) *limbov1alpha1.Bundle {
	return (*DeclarationsMemo)(nil).Adopter(bundles, gk, name, except)
}

// Adopter is the package's Adopter, each Bundle decoded at most once for all
// the lookups of m (a reaper wake's due released objects).
func (m *DeclarationsMemo) Adopter(bundles []limbov1alpha1.Bundle, gk schema.GroupKind, name, except string) *limbov1alpha1.Bundle {
	for i := range bundles {
		if b := &bundles[i]; b.Name != except && b.DeletionTimestamp.IsZero() && slices.ContainsFunc(b.Spec.Resources, mentionsAdopt) &&
			m.Of(b).Declares(gk, name) == DeclaredToAdopt {
			return b
		}
	}
	return nil
}

// AdoptionKeys are the objects b's templates declare to adopt (limbo.dev/adopt),
// as AdoptionKey names them: the keys of a cache index. The index runs on every
// event of a Bundle, status writes included: a template that does not mention
// the annotation is not decoded.
func AdoptionKeys(b *limbov1alpha1.Bundle) []string {
	var keys []string
	for _, res := range b.Spec.Resources {
		if !mentionsAdopt(res) {
			continue
		}
		if h, ok, err := HeaderOf(res); ok && err == nil && h.Annotations[limbov1alpha1.AnnotationAdopt] == "true" {
			keys = append(keys, AdoptionKey(h.GVK.GroupKind(), h.Name))
		}
	}
	return keys
}

// mentionsAdopt reports whether res is a template whose text mentions
// limbo.dev/adopt: one that does not cannot declare an object to adopt, and is
// not decoded to find out.
func mentionsAdopt(res limbov1alpha1.Resource) bool {
	return res.Object != nil && bytes.Contains(res.Object.Raw, []byte(limbov1alpha1.AnnotationAdopt))
}

// AdoptionKey names the object of kind gk named name in AdoptionKeys: by its
// StoredKind, as ObjectKey does.
func AdoptionKey(gk schema.GroupKind, name string) string { return ObjectKey(gk, name) }

// Plan is a validated Bundle spec.
type Plan struct {
	// Order lists resource names, dependencies first; ties keep declaration order.
	Order []string
	// Graph holds the dependencies between resources.
	Graph *graph.Graph
	// Resources by name.
	Resources map[string]*Resource
	// Objects maps the ObjectKey of each declared object to its resource.
	Objects map[string]string
	// referenced holds the resources a reference reads (Referenced): asked
	// once per write, a scan of every reference made a long chain quadratic.
	referenced map[string]bool
}

// Referenced reports whether a reference of any resource reads resource name.
func (p *Plan) Referenced(name string) bool { return p.referenced[name] }

// Parse validates b's spec and returns its plan, or every error found.
func Parse(b *limbov1alpha1.Bundle, mapper meta.RESTMapper, plugins PluginCatalog) (*Plan, Errors) {
	plan, errs := ParsePartial(b, mapper, plugins)
	if len(errs) > 0 {
		return nil, errs
	}
	return plan, nil
}

// ParsePartial is Parse, but with errors it also returns the plan as far as it
// could be made: every resource, with the object of each whose template parsed,
// and the dependency graph (Order is empty). What a resource references needs no
// valid template, so a teardown of a Bundle whose spec went wrong (a kind's CRD
// uninstalled, a typo) still deletes in reverse dependency order.
func ParsePartial(b *limbov1alpha1.Bundle, mapper meta.RESTMapper, plugins PluginCatalog) (*Plan, Errors) {
	plan := &Plan{Resources: map[string]*Resource{}, Objects: map[string]string{}}
	var errs Errors
	add := func(resource, reason, format string, args ...any) {
		errs = append(errs, Error{Resource: resource, Reason: reason, Message: fmt.Sprintf(format, args...)})
	}
	for _, r := range b.Spec.Resources {
		if _, dup := plan.Resources[r.Name]; dup {
			add(r.Name, limbov1alpha1.ReasonDuplicateName, "resource name %q is used more than once", r.Name)
			continue
		}
		res := &Resource{Resource: r}
		plan.Resources[r.Name] = res
		if msgs := validation.IsDNS1123Label(r.Name); len(msgs) > 0 {
			add(r.Name, limbov1alpha1.ReasonInvalidResource, "name: %s", strings.Join(msgs, "; "))
		}
		switch {
		case (r.Object == nil) == (r.Plugin == nil):
			add(r.Name, limbov1alpha1.ReasonInvalidResource, "a resource must have exactly one of object and plugin")
		case r.Object != nil:
			for _, e := range parseObject(b.Namespace, res, mapper) {
				add(r.Name, e.Reason, "%s", e.Message)
			}
			if key := res.ObjectKey(); key != "" {
				if other, dup := plan.Objects[key]; dup {
					add(r.Name, limbov1alpha1.ReasonDuplicateObject, "declares the same object as resource %q: %s %q", other, res.GVK.Kind, res.Template.GetName())
				} else {
					plan.Objects[key] = r.Name
				}
			}
		default:
			if _, err := softdelete.ParseDelayOf("plugin.deletionDelay", r.Plugin.DeletionDelay); r.Plugin.DeletionDelay != "" && err != nil {
				add(r.Name, limbov1alpha1.ReasonInvalidDeletionDelay, "%v", err)
			}
			switch err := validatePlugin(plugins, r); {
			case errors.Is(err, ErrUnknownPlugin):
				// The catalog's error: it names the plugins there are.
				add(r.Name, limbov1alpha1.ReasonUnknownPlugin, "%v", err)
			case err != nil:
				add(r.Name, limbov1alpha1.ReasonInvalidPluginSpec, "plugin %q: %v", r.Plugin.Name, err)
			}
		}
	}
	for _, r := range b.Spec.Resources {
		for _, ref := range r.References {
			if _, ok := plan.Resources[ref.Resource]; !ok {
				add(r.Name, limbov1alpha1.ReasonMissingReference, "references missing resource %q", ref.Resource)
			}
		}
		if err := checkMarkers(r); err != nil {
			add(r.Name, limbov1alpha1.ReasonUndeclaredReference, "%v", err)
		}
		for _, problem := range checkReferences(r, plan.Resources) {
			add(r.Name, limbov1alpha1.ReasonInvalidReference, "%s", problem)
		}
	}
	plan.Graph = graph.ForResources(b.Spec.Resources)
	order, err := plan.Graph.TopologicalSort()
	var cycle *graph.CycleError
	switch {
	case errors.As(err, &cycle):
		add(cycle.Path[0], limbov1alpha1.ReasonDependencyCycle, "%v", err)
	case err != nil && len(errs) == 0: // a missing vertex is reported above
		add("", limbov1alpha1.ReasonMissingReference, "%v", err)
	}
	plan.referenced = map[string]bool{}
	for _, r := range plan.Resources {
		for _, ref := range r.References {
			plan.referenced[ref.Resource] = true
		}
	}
	if len(errs) > 0 {
		sortErrors(b, errs)
		return plan, errs
	}
	plan.Order = order
	return plan, nil
}

// serverSetMetadata are the fields of an object's metadata that the API server
// sets: a template's are dropped.
var serverSetMetadata = []string{"resourceVersion", "uid", "generation", "creationTimestamp",
	"deletionTimestamp", "deletionGracePeriodSeconds", "managedFields", "selfLink"}

func parseObject(namespace string, res *Resource, mapper meta.RESTMapper) Errors {
	var errs Errors
	fail := func(reason, format string, args ...any) Errors {
		return append(errs, Error{Reason: reason, Message: fmt.Sprintf(format, args...)})
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(res.Object.Raw); err != nil {
		return fail(limbov1alpha1.ReasonInvalidObject, "object: %v", err)
	}
	// Metadata the API server sets means nothing in a template, and some of it
	// would go out with every apply: a resourceVersion left from `kubectl get -o
	// yaml` made each apply after the first a precondition that failed
	// (Conflict), at every pass, for good.
	for _, field := range serverSetMetadata {
		unstructured.RemoveNestedField(u.Object, "metadata", field)
	}
	gvk := u.GroupVersionKind()
	if gvk.Kind == "" || gvk.Version == "" {
		return fail(limbov1alpha1.ReasonInvalidObject, "object: apiVersion and kind are required")
	}
	for _, problem := range MetadataTypeErrors(u.Object) {
		errs = fail(limbov1alpha1.ReasonInvalidObject, "object: %s", problem)
	}
	if _, ok := u.Object["metadata"]; !ok {
		// Most likely a misspelt key (`metdata:`): listing the keys shows it.
		errs = fail(limbov1alpha1.ReasonInvalidObject, "object: metadata.name is required; the template has no %q (its keys: %s)",
			"metadata", boundedtext.Join(slices.Sorted(maps.Keys(u.Object)), ", ", listBudget))
	} else if name, _, _ := unstructured.NestedFieldNoCopy(u.Object, "metadata", "name"); name == nil || name == "" {
		// (A name of another type is reported by MetadataTypeErrors.)
		errs = fail(limbov1alpha1.ReasonInvalidObject, "object: metadata.name is required")
	}
	// Names are literal: limbo tracks an object by the name its template states,
	// so a name that a reference fills in would be tracked under one name and
	// created under another (and deleted and re-created in a loop). An escape
	// (!!{x}) would be too: it is written as !{x}. Either holds
	// reference.MarkerOpening.
	for _, field := range []string{"name", "namespace"} {
		if value, _, _ := unstructured.NestedString(u.Object, "metadata", field); strings.Contains(value, reference.MarkerOpening) {
			errs = fail(limbov1alpha1.ReasonTemplatedName, "object: metadata.%s %q must be literal: references (!{…}) and their escapes (!!{…}) are not allowed in an object's name or namespace", field, value)
		}
	}
	if LimbosOwnKind(gvk) {
		errs = fail(limbov1alpha1.ReasonInvalidObject, "object: a Bundle cannot hold a %s", gvk.Kind)
	}
	switch ns := u.GetNamespace(); {
	case ns == "":
		u.SetNamespace(namespace)
	case ns != namespace:
		errs = fail(limbov1alpha1.ReasonWrongNamespace, "object: namespace %q is not the Bundle's namespace %q", ns, namespace)
	}
	for _, key := range LimboOnly(u) {
		errs = fail(limbov1alpha1.ReasonProhibitedAnnotation, "object: %s is set by limbo only", key)
	}
	annotations := u.GetAnnotations()
	if err := InvalidDelay(u); err != nil {
		errs = fail(limbov1alpha1.ReasonInvalidDeletionDelay, "object: %v", err)
	}
	if owner := metav1.GetControllerOfNoCopy(u); owner != nil {
		errs = fail(limbov1alpha1.ReasonInvalidObject, "object: metadata.ownerReferences: a controller owner reference (%s %q) is set; limbo is the controller of the objects it manages", owner.Kind, owner.Name)
	}
	if mapper != nil {
		if reason, err := HeldKind(mapper, gvk); err != nil {
			errs = fail(reason, "object: %v", err)
		}
	}
	res.Template, res.GVK = u, gvk
	res.Adopt = annotations[limbov1alpha1.AnnotationAdopt] == "true"
	return errs
}

// MetadataTypeErrors are the fields of obj's metadata that unstructured's
// getters cannot read for their type: metadata that is not an object,
// metadata.name or metadata.namespace that is not a string, metadata.labels or
// metadata.annotations that is not a map of strings. A getter reads such a field
// as absent (GetAnnotations returns nil when any one value is not a string), so
// the checks of limbo's marks would not see them behind one number, and the
// namespace and labels limbo sets would replace the template's without a word.
// A null field is absent (as the API server reads it: `labels:` with nothing
// under it in YAML).
func MetadataTypeErrors(obj map[string]any) []string {
	md, ok := obj["metadata"].(map[string]any)
	if !ok {
		if v := obj["metadata"]; v != nil {
			return []string{fmt.Sprintf("metadata must be an object, not %s", fieldpath.TypeOf(v))}
		}
		return nil // absent: reported as a missing name
	}
	var problems []string
	for _, field := range []string{"name", "namespace"} {
		if v := md[field]; v != nil {
			if _, ok := v.(string); !ok {
				problems = append(problems, fmt.Sprintf("metadata.%s must be a string, not %s", field, fieldpath.TypeOf(v)))
			}
		}
	}
	for _, field := range []string{"labels", "annotations"} {
		v := md[field]
		if v == nil {
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			problems = append(problems, fmt.Sprintf("metadata.%s must be a map of strings, not %s", field, fieldpath.TypeOf(v)))
			continue
		}
		for _, key := range slices.Sorted(maps.Keys(m)) {
			if _, ok := m[key].(string); !ok {
				problems = append(problems, fmt.Sprintf("metadata.%s[%q] must be a string, not %s", field, key, fieldpath.TypeOf(m[key])))
			}
		}
	}
	return problems
}

// LimbosOwnKind tells whether gvk is one of limbo's own kinds (its API group,
// any version): Bundles and Tombstones are limbo's to write — its writes of
// them are never impersonated — so a Bundle, template or generated object,
// holds none.
func LimbosOwnKind(gvk schema.GroupVersionKind) bool {
	return gvk.Group == limbov1alpha1.GroupVersion.Group
}

// HeldKind checks that a Bundle may hold objects of gvk, a template's or one a
// plugin generates: a kind the API server serves (mapper), namespaced — a
// cluster-scoped object owned by a namespaced Bundle is one the garbage
// collector ignores and no listing of the Bundle's namespace finds, never
// cleaned up. reason is the spec error's (UnknownKind, ClusterScoped).
func HeldKind(mapper meta.RESTMapper, gvk schema.GroupVersionKind) (reason string, err error) {
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	switch {
	case err != nil && !meta.IsNoMatchError(err):
		// Discovery failed, or an aggregated API is unavailable: not an
		// unknown kind, and not for good.
		return limbov1alpha1.ReasonKindUnavailable, fmt.Errorf("whether the API server serves %s cannot be told now (retried): %w", gvk.Kind, err)
	case err != nil:
		return limbov1alpha1.ReasonUnknownKind, err
	case mapping.Scope.Name() != meta.RESTScopeNameNamespace:
		return limbov1alpha1.ReasonClusterScoped, fmt.Errorf("%s is cluster-scoped; a Bundle holds namespaced objects only", gvk.Kind)
	}
	return "", nil
}

// validatePlugin checks r's plugin spec against the plugin's schema, with the
// examples of r's references standing in for their markers (Smith's
// prevalidation): a marker in a field of another type than string, or one
// with a pattern ("!{interval}" in a duration), is checked on its example. A
// field whose marker has no example is judged once its references are
// resolved, in the pass.
func validatePlugin(plugins PluginCatalog, r limbov1alpha1.Resource) error {
	if plugins == nil {
		return fmt.Errorf("%w %q (no plugins are registered)", ErrUnknownPlugin, r.Plugin.Name)
	}
	spec, unresolved := r.Plugin.Spec, []string(nil)
	// Substituted even without references: an escaped marker is text (!!{x} is
	// "!{x}"), and an undeclared one waits as unresolved (checkMarkers reports it).
	if spec != nil && bytes.Contains(spec.Raw, []byte(reference.MarkerOpening)) {
		// Decoded as the API server decodes (integers stay int64): the plugin's
		// check must judge the spec the plugin will get (plugin.ResolveSpec).
		var value any
		if err := utiljson.Unmarshal(spec.Raw, &value); err == nil {
			// An invalid example is reported by checkReferences.
			if content, missing, err := reference.SubstituteExamples(map[string]any{"spec": value}, r.References); err == nil {
				if raw, err := json.Marshal(content["spec"]); err == nil {
					spec, unresolved = &apiextensionsv1.JSON{Raw: raw}, missing
				}
			}
		}
	}
	return plugins.ValidateSpec(r.Plugin.Name, spec, unresolved)
}

// checkReferences reports what is wrong with r's references whatever the
// values they will read: each error would otherwise surface only once r's
// dependencies are Ready, and then as a ReferenceError that looks transient.
// resources are the Bundle's, parsed (for the kinds they declare).
func checkReferences(r limbov1alpha1.Resource, resources map[string]*Resource) []string {
	var problems []string
	used, _ := usedMarkers(r)
	target := resources[r.Name]
	targetIsSecret := target != nil && target.Template != nil && reference.IsSecret(target.Template.Object)
	names := map[string]bool{}
	for _, ref := range r.References {
		if ref.Name == "" {
			continue
		}
		if names[ref.Name] {
			problems = append(problems, fmt.Sprintf("reference %q is declared more than once", ref.Name))
		}
		names[ref.Name] = true
		if ref.Path == "" {
			problems = append(problems, fmt.Sprintf("reference %q has a name but no path: a named reference reads the value at its path", ref.Name))
		} else if _, err := fieldpath.Parse(ref.Path, false); err != nil {
			problems = append(problems, fmt.Sprintf("reference %q: path %q: %v", ref.Name, ref.Path, err))
		}
		if ref.Example != nil {
			var example any
			if err := json.Unmarshal(ref.Example.Raw, &example); err != nil {
				problems = append(problems, fmt.Sprintf("reference %q: invalid example: %v", ref.Name, err))
			}
		}
		source := resources[ref.Resource]
		sourceIsSecret := source != nil && source.Template != nil && reference.IsSecret(source.Template.Object)
		if used[ref.Name] && !targetIsSecret && sourceIsSecret {
			problems = append(problems, fmt.Sprintf("reference %q reads Secret %q: a value read from a Secret may only be injected into a Secret", ref.Name, source.Template.GetName()))
		}
		// A path is evaluated on the live object, and a live Secret has no
		// stringData: such a reference would never resolve.
		if sourceIsSecret && fieldpath.StartsAt(ref.Path, "stringData") {
			problems = append(problems, fmt.Sprintf("reference %q reads stringData of Secret %q, which the API server does not keep (it stores those keys base64-encoded in data): read data.<key> instead", ref.Name, source.Template.GetName()))
		}
	}
	return problems
}

// checkMarkers reports !{name} markers that no reference of r declares.
func checkMarkers(r limbov1alpha1.Resource) error {
	declared := map[string]bool{}
	for _, ref := range r.References {
		if ref.Name != "" {
			declared[ref.Name] = true
		}
	}
	used, ok := usedMarkers(r)
	if !ok {
		return nil // reported as an invalid object or plugin spec
	}
	var undeclared []string
	for _, name := range slices.Sorted(maps.Keys(used)) {
		if !declared[name] {
			undeclared = append(undeclared, "!{"+name+"}")
		}
	}
	if len(undeclared) > 0 {
		return fmt.Errorf("uses undeclared references: %s", boundedtext.Join(undeclared, ", ", listBudget))
	}
	return nil
}

// usedMarkers are the names of the !{name} markers in r's object or plugin
// spec; ok is false when that is not JSON.
func usedMarkers(r limbov1alpha1.Resource) (used map[string]bool, ok bool) {
	var raw []byte
	switch {
	case r.Object != nil:
		raw = r.Object.Raw
	case r.Plugin != nil && r.Plugin.Spec != nil:
		raw = r.Plugin.Spec.Raw
	}
	var decoded any
	if err := json.Unmarshal(raw, &decoded); len(raw) > 0 && err != nil {
		return nil, false
	}
	used = map[string]bool{}
	// Markers walks objects; a plugin spec may be any JSON value.
	for _, name := range reference.Markers(map[string]any{"value": decoded}) {
		used[name] = true
	}
	return used, true
}

// sortErrors orders errors by the declaration order of their resources, stably.
func sortErrors(b *limbov1alpha1.Bundle, errs Errors) {
	index := map[string]int{}
	for i, r := range b.Spec.Resources {
		if _, ok := index[r.Name]; !ok {
			index[r.Name] = i
		}
	}
	sort.SliceStable(errs, func(i, j int) bool { return index[errs[i].Resource] < index[errs[j].Resource] })
}

// limboOnlyAnnotations are the marks of limbo's soft delete that only the
// controller writes, and the note that only kubectl limbo expedite writes.
// Declared in a template (copied from a live object's YAML, say), a mark would
// pass limbo's own decisions off as made: a released mark makes the object the
// reaper's once a --cascade=orphan delete drops its owner reference, a plugin
// resource's mark has a teardown cancel its countdown and delete it in the first
// wave, a generator's mark moves it to another teardown wave. The note would
// misdate the countdown kubectl limbo shows, and come back with every apply
// after a cancel removed it.
var limboOnlyAnnotations = []string{
	limbov1alpha1.AnnotationDeletionTimestamp,
	limbov1alpha1.AnnotationReleased,
	limbov1alpha1.AnnotationPluginResource,
	limbov1alpha1.AnnotationGeneratedBy,
	limbov1alpha1.AnnotationExpeditedFrom,
}

// InvalidDelay is the error of obj's limbo.dev/deletionDelay when it is set and
// no valid delay; nil otherwise. A template or a generated object with one is
// refused: applied, the object would be kept for good once it left.
func InvalidDelay(obj metav1.Object) error {
	delay, set := obj.GetAnnotations()[limbov1alpha1.AnnotationDeletionDelay]
	if !set {
		return nil
	}
	_, err := softdelete.ParseDelay(delay)
	return err
}

// LimboOnly names the annotations and labels of obj that only limbo sets
// (`annotation "limbo.dev/released"`), in a fixed order: a template or a
// generated object that sets one is refused.
func LimboOnly(obj metav1.Object) []string {
	var set []string
	for _, key := range limboOnlyAnnotations {
		if _, ok := obj.GetAnnotations()[key]; ok {
			set = append(set, fmt.Sprintf("annotation %q", key))
		}
	}
	if _, ok := obj.GetLabels()[limbov1alpha1.LabelPendingDeletion]; ok {
		set = append(set, fmt.Sprintf("label %q", limbov1alpha1.LabelPendingDeletion))
	}
	return set
}
