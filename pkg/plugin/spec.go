package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/reference"
)

// ResolveSpec returns the spec of the plugin resource res with its references
// resolved from sources (by referenced resource name), as JSON; "{}" when it
// has none. A Bundle's pass, its teardown and the Tombstone controller all call
// plugins with it, so that they see the same spec.
func ResolveSpec(res limbov1alpha1.Resource, sources map[string]reference.Source) ([]byte, error) {
	if res.Plugin == nil || res.Plugin.Spec == nil || len(res.Plugin.Spec.Raw) == 0 {
		return []byte("{}"), nil
	}
	// Substituted even without references: an escaped marker (!!{x}) is the
	// text "!{x}". Decoded as the API server decodes (integers stay int64), so
	// that a spec passes through unchanged but for its markers; one without a
	// marker's characters is passed on as it is (every pass resolves every
	// plugin resource's spec).
	if !bytes.Contains(res.Plugin.Spec.Raw, []byte(reference.MarkerOpening)) {
		// A copy: a plan or teardown call outlives its pass, and the Bundle whose
		// bytes these are is written to (a status or teardown-state patch decodes
		// the answer into it).
		return bytes.Clone(res.Plugin.Spec.Raw), nil
	}
	var value any
	if err := utiljson.Unmarshal(res.Plugin.Spec.Raw, &value); err != nil {
		return nil, err
	}
	values, err := reference.Resolve(res.References, sources, false)
	if err != nil {
		return nil, err
	}
	content, err := reference.Substitute(map[string]any{"spec": value}, values)
	if err != nil {
		return nil, err
	}
	return json.Marshal(content["spec"])
}

// ResolveSpecFromStatus is ResolveSpec outside a pass: the plugin resource named
// resource of b, with the sources read from the live objects b's status records
// for the referenced resources — only objects b controls, as a pass reads only
// what it applied or adopted. The status records an object its resource could
// not take too (NotOwned, Forbidden, ControlledByOther): read as limbo, its values
// would reach the plugin, its errors and the Bundle's status, though the Bundle's
// author may not read it.
//
// The status is not trusted with where to read, either: written by a tenant (a
// platform that grants bundles/status), it would make limbo, which reads here as
// itself, tell whether any object of the cluster exists (NotFound, or "not the
// Bundle's"). An object is read in the Bundle's namespace, where every object
// of a Bundle is, whatever namespace the status names; one of a cluster-scoped
// kind, or of a kind whose scope c cannot tell (a client.Client can), is not read
// at all.
func ResolveSpecFromStatus(ctx context.Context, c client.Reader, b *limbov1alpha1.Bundle, resource string) ([]byte, error) {
	res := b.PluginResource(resource)
	if res == nil {
		return nil, fmt.Errorf("the Bundle has no plugin resource %q", resource)
	}
	sources := map[string]reference.Source{}
	for _, ref := range res.References {
		for _, st := range b.Status.Resources {
			if st.Name != ref.Resource || st.Object == nil {
				continue
			}
			u := &unstructured.Unstructured{}
			u.SetAPIVersion(st.Object.APIVersion)
			u.SetKind(st.Object.Kind)
			scoper, ok := c.(objectScoper)
			if !ok {
				return nil, fmt.Errorf("resource %q: the reader cannot tell whether %s is namespaced: its values are not read", ref.Resource, st.Object.Kind)
			}
			switch namespaced, err := scoper.IsObjectNamespaced(u); {
			case err != nil:
				return nil, fmt.Errorf("resource %q: %s: %w", ref.Resource, st.Object.Kind, err)
			case !namespaced:
				return nil, fmt.Errorf("resource %q: %s %q is cluster-scoped, not in the Bundle's namespace: its values are not read", ref.Resource, st.Object.Kind, st.Object.Name)
			}
			if err := c.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: st.Object.Name}, u); err != nil {
				return nil, fmt.Errorf("resource %q: %w", ref.Resource, err)
			}
			if !metav1.IsControlledBy(u, b) {
				return nil, fmt.Errorf("resource %q: %s %q is not the Bundle's (it does not control it): its values are not read", ref.Resource, st.Object.Kind, st.Object.Name)
			}
			sources[ref.Resource] = reference.Source{Object: u.Object, Secret: reference.IsSecret(u.Object)}
		}
	}
	return ResolveSpec(*res, sources)
}

// objectScoper tells a namespaced kind from a cluster-scoped one (client.Client
// does).
type objectScoper interface {
	IsObjectNamespaced(obj runtime.Object) (bool, error)
}

// ParseDuration reads the optional duration field name of a spec (a *string
// tagged `schema:"duration"`): def when it is absent. The schema already refuses
// a negative or unparsable value, but a plugin's parse must not trust that it
// ran; positive also refuses zero ("0s", "0m0s"), which the duration pattern
// admits. The error names the field (spec.<name>), as the schema's do, for
// SpecChecker.
func ParseDuration(name string, value *string, def time.Duration, positive bool) (time.Duration, error) {
	if value == nil {
		return def, nil
	}
	d, err := time.ParseDuration(*value)
	switch {
	case positive && (err != nil || d <= 0):
		return 0, field.Invalid(field.NewPath("spec", name), *value, "must be a positive duration (90s, 1h30m)")
	case err != nil || d < 0:
		return 0, field.Invalid(field.NewPath("spec", name), *value, "must be a duration ≥ 0 (0s, 90s, 1h30m)")
	}
	return d, nil
}

// DurationRange bounds a duration field further than ParseDuration does.
type DurationRange struct {
	// Min refuses a value below it: a poll interval shorter than that would
	// hammer its backend (a login and a listing on every poll). Zero: none.
	Min time.Duration
	// ZeroDisables admits 0 below Min: the field's documented "0s = off".
	ZeroDisables bool
	// Max refuses a value above it (a poll interval whose jitter would
	// overflow). Zero: none.
	Max time.Duration
}

// ParseDurationIn is ParseDuration for a field bounded by r: def when the field
// is absent (the default is the caller's to keep within r), and an error naming
// the field and the bounds for a value outside them.
func ParseDurationIn(name string, value *string, def time.Duration, r DurationRange) (time.Duration, error) {
	if value == nil {
		return def, nil
	}
	d, err := time.ParseDuration(*value)
	if err == nil && d >= 0 && ((d == 0 && r.ZeroDisables) || d >= r.Min) && (r.Max == 0 || d <= r.Max) {
		return d, nil
	}
	return 0, field.Invalid(field.NewPath("spec", name), *value, r.describe())
}

// describe is the error of a value outside r: "must be 0s (disabled) or a
// duration of at least 10s".
func (r DurationRange) describe() string {
	var b strings.Builder
	b.WriteString("must be ")
	if r.ZeroDisables {
		b.WriteString("0s (disabled) or ")
	}
	b.WriteString("a duration")
	switch {
	case r.Min > 0 && r.Max > 0:
		fmt.Fprintf(&b, " of at least %v and at most %v", r.Min, r.Max)
	case r.Min > 0:
		fmt.Fprintf(&b, " of at least %v", r.Min)
	case r.Max > 0:
		fmt.Fprintf(&b, " ≥ 0 and at most %v", r.Max)
	default:
		b.WriteString(" ≥ 0")
	}
	if examples := 90 * time.Minute; r.Min <= 90*time.Second && (r.Max == 0 || r.Max >= examples) {
		b.WriteString(" (90s, 1h30m)")
	}
	return b.String()
}
