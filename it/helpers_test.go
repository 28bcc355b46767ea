package it

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

var (
	configMapGVK = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	widgetGVK    = schema.GroupVersionKind{Group: "test.limbo.dev", Version: "v1", Kind: "Widget"}
)

// objectResource is a Bundle resource holding obj.
func objectResource(t testing.TB, name string, obj map[string]any, refs ...limbov1alpha1.Reference) limbov1alpha1.Resource {
	return limbov1alpha1.Resource{Name: name, References: refs, Object: rawObject(t, obj)}
}

// configMap is a ConfigMap template.
// configMapResources is n resources of ConfigMaps named prefix-00, prefix-01, …
// (the resource named as its ConfigMap), each annotated with annotations.
func configMapResources(t testing.TB, prefix string, n int, annotations map[string]any) []limbov1alpha1.Resource {
	out := make([]limbov1alpha1.Resource, 0, n)
	for i := range n {
		name := fmt.Sprintf("%s-%02d", prefix, i)
		out = append(out, objectResource(t, name, configMap(name, map[string]any{"a": "b"}, annotations)))
	}
	return out
}

func configMap(name string, data map[string]any, annotations map[string]any) map[string]any {
	md := map[string]any{"name": name}
	if annotations != nil {
		md["annotations"] = annotations
	}
	return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": md, "data": data}
}

// widget is a Widget template; tests drive its status.
func widget(name string) map[string]any {
	return map[string]any{"apiVersion": "test.limbo.dev/v1", "kind": "Widget", "metadata": map[string]any{"name": name}, "spec": map[string]any{"size": int64(1)}}
}

func createBundle(t testing.TB, ns, name string, resources ...limbov1alpha1.Resource) *limbov1alpha1.Bundle {
	t.Helper()
	return createLabelledBundle(t, ns, name, nil, resources...)
}

// createLabelledBundle creates a Bundle with labels (a shard's, for example).
func createLabelledBundle(t testing.TB, ns, name string, labels map[string]string, resources ...limbov1alpha1.Resource) *limbov1alpha1.Bundle {
	t.Helper()
	b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}, Spec: limbov1alpha1.BundleSpec{Resources: resources}}
	if err := env.Client.Create(context.Background(), b); err != nil {
		t.Fatalf("create Bundle: %v", err)
	}
	return b
}

// updateBundle replaces the Bundle's resources, retrying on conflicts.
func updateBundle(t testing.TB, b *limbov1alpha1.Bundle, resources ...limbov1alpha1.Resource) {
	t.Helper()
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		var cur limbov1alpha1.Bundle
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(b), &cur); err != nil {
			return err
		}
		cur.Spec.Resources = resources
		return env.Client.Update(context.Background(), &cur)
	})
}

func getBundle(t testing.TB, b *limbov1alpha1.Bundle) *limbov1alpha1.Bundle {
	t.Helper()
	var cur limbov1alpha1.Bundle
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(b), &cur); err != nil {
		t.Fatalf("get Bundle: %v", err)
	}
	return &cur
}

// waitBundle polls until check accepts the Bundle's current, observed status.
func waitBundle(t testing.TB, b *limbov1alpha1.Bundle, check func(*limbov1alpha1.Bundle) error) *limbov1alpha1.Bundle {
	t.Helper()
	var cur limbov1alpha1.Bundle
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(b), &cur); err != nil {
			return err
		}
		if cur.Status.ObservedGeneration != cur.Generation {
			return fmt.Errorf("status observes generation %d, not %d", cur.Status.ObservedGeneration, cur.Generation)
		}
		return check(&cur)
	})
	return &cur
}

func waitReady(t testing.TB, b *limbov1alpha1.Bundle) *limbov1alpha1.Bundle {
	t.Helper()
	return waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error { return conditionIs(cur, "Ready", metav1.ConditionTrue, "") })
}

// conditionIs checks a condition's status and, when reason is not empty, reason.
func conditionIs(b *limbov1alpha1.Bundle, typ string, status metav1.ConditionStatus, reason string) error {
	c := meta.FindStatusCondition(b.Status.Conditions, typ)
	if c == nil {
		return fmt.Errorf("no %s condition; conditions: %+v", typ, b.Status.Conditions)
	}
	if c.Status != status || (reason != "" && c.Reason != reason) {
		return fmt.Errorf("%s is %s/%s (%s), want %s/%s", typ, c.Status, c.Reason, c.Message, status, reason)
	}
	return nil
}

func resourceStatus(b *limbov1alpha1.Bundle, name string) *limbov1alpha1.ResourceStatus {
	for i := range b.Status.Resources {
		if b.Status.Resources[i].Name == name {
			return &b.Status.Resources[i]
		}
	}
	return nil
}

// resourceIs checks a resource's state and reason.
func resourceIs(b *limbov1alpha1.Bundle, name string, state limbov1alpha1.ResourceState, reason string) error {
	st := resourceStatus(b, name)
	if st == nil {
		return fmt.Errorf("no status for resource %q: %+v", name, b.Status.Resources)
	}
	if st.State != state || (reason != "" && st.Reason != reason) {
		return fmt.Errorf("resource %q is %s/%s (%s), want %s/%s", name, st.State, st.Reason, st.Message, state, reason)
	}
	return nil
}

// getObject reads an object straight from the API server; nil if it does not exist.
func getObject(t testing.TB, gvk schema.GroupVersionKind, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return nil
		}
		t.Fatalf("get %s %s: %v", gvk.Kind, name, err)
	}
	return u
}

func waitObject(t testing.TB, gvk schema.GroupVersionKind, ns, name string, check func(*unstructured.Unstructured) error) *unstructured.Unstructured {
	t.Helper()
	var u *unstructured.Unstructured
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		u = getObject(t, gvk, ns, name)
		if u == nil {
			return fmt.Errorf("%s %s does not exist", gvk.Kind, name)
		}
		return check(u)
	})
	return u
}

func waitGone(t testing.TB, gvk schema.GroupVersionKind, ns, name string) {
	t.Helper()
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if getObject(t, gvk, ns, name) != nil {
			return fmt.Errorf("%s %s still exists", gvk.Kind, name)
		}
		return nil
	})
}

// setWidgetReady writes a Widget's status the way its operator would.
func setWidgetReady(t testing.TB, ns, name string, ready bool) {
	t.Helper()
	status := "False"
	if ready {
		status = "True"
	}
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		u := getObject(t, widgetGVK, ns, name)
		if u == nil {
			return fmt.Errorf("widget %s does not exist", name)
		}
		u.Object["status"] = map[string]any{
			"observedGeneration": u.GetGeneration(),
			"conditions":         []any{map[string]any{"type": "Ready", "status": status, "reason": "Test", "message": "set by the test"}},
		}
		return env.Client.Status().Update(context.Background(), u)
	})
}

var gadgetGVK = schema.GroupVersionKind{Group: "test.limbo.dev", Version: "v1", Kind: "Gadget"}

// gadget is a Gadget template: Ready when status.phase is Running (its CRD says so).
func gadget(name string) map[string]any {
	return map[string]any{"apiVersion": "test.limbo.dev/v1", "kind": "Gadget", "metadata": map[string]any{"name": name}, "spec": map[string]any{"size": int64(1)}}
}

// withAnnotations returns the template with annotations added to its metadata.
func withAnnotations(obj map[string]any, annotations map[string]any) map[string]any {
	md := obj["metadata"].(map[string]any)
	all, _ := md["annotations"].(map[string]any)
	if all == nil {
		all = map[string]any{}
	}
	for k, v := range annotations {
		all[k] = v
	}
	md["annotations"] = all
	return obj
}

// setGadgetPhase writes a Gadget's status.phase the way its operator would.
func setGadgetPhase(t testing.TB, ns, name, phase string) {
	t.Helper()
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		u := getObject(t, gadgetGVK, ns, name)
		if u == nil {
			return fmt.Errorf("gadget %s does not exist", name)
		}
		u.Object["status"] = map[string]any{"phase": phase}
		return env.Client.Status().Update(context.Background(), u)
	})
}

// createObject creates obj (unstructured content) as the test client, outside any
// Bundle, and returns it as created.
func createObject(t testing.TB, ns string, obj map[string]any) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{Object: obj}
	u.SetNamespace(ns)
	if err := env.Client.Create(context.Background(), u); err != nil {
		t.Fatalf("create %s %s: %v", u.GetKind(), u.GetName(), err)
	}
	return u
}

// createWidget creates a Widget outside any Bundle with a Ready condition of the
// given status, as if its operator had reported on it already.
func createWidget(t testing.TB, ns, name string, ready bool) {
	t.Helper()
	createObject(t, ns, widget(name))
	setWidgetReady(t, ns, name, ready)
}

// events lists the events whose involved object is the Bundle b.
func events(t testing.TB, b *limbov1alpha1.Bundle) []corev1.Event {
	t.Helper()
	var list corev1.EventList
	if err := env.Client.List(context.Background(), &list, client.InNamespace(b.Namespace)); err != nil {
		t.Fatalf("list events: %v", err)
	}
	var out []corev1.Event
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == "Bundle" && e.InvolvedObject.Name == b.Name {
			out = append(out, e)
		}
	}
	return out
}

// waitEvent waits for an event on the Bundle with the type, reason and message.
func waitEvent(t testing.TB, b *limbov1alpha1.Bundle, typ, reason, message string) {
	t.Helper()
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		var seen []string
		for _, e := range events(t, b) {
			if e.Type == typ && e.Reason == reason && e.Message == message {
				return nil
			}
			seen = append(seen, fmt.Sprintf("%s/%s: %s", e.Type, e.Reason, e.Message))
		}
		return fmt.Errorf("no %s event %s %q; events: %q", typ, reason, message, seen)
	})
}

// eventContaining finds an event on the Bundle with the type and reason whose
// message contains every one of parts.
func eventContaining(t testing.TB, b *limbov1alpha1.Bundle, typ, reason string, parts ...string) (corev1.Event, error) {
	var seen []string
	for _, e := range events(t, b) {
		if e.Type == typ && e.Reason == reason && !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(e.Message, p) }) {
			return e, nil
		}
		seen = append(seen, fmt.Sprintf("%s/%s: %s", e.Type, e.Reason, e.Message))
	}
	return corev1.Event{}, fmt.Errorf("no %s event %s with %q; events: %q", typ, reason, parts, seen)
}

// waitEventContaining waits for eventContaining and returns the event.
func waitEventContaining(t testing.TB, b *limbov1alpha1.Bundle, typ, reason string, parts ...string) corev1.Event {
	t.Helper()
	var found corev1.Event
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		var err error
		found, err = eventContaining(t, b, typ, reason, parts...)
		return err
	})
	return found
}

// resourceMessageIs checks a resource's state, reason and message exactly.
func resourceMessageIs(b *limbov1alpha1.Bundle, name string, state limbov1alpha1.ResourceState, reason, message string) error {
	if err := resourceIs(b, name, state, reason); err != nil {
		return err
	}
	if st := resourceStatus(b, name); st.Reason != reason || st.Message != message {
		return fmt.Errorf("resource %q is %s/%s with message %q, want reason %q and message %q", name, st.State, st.Reason, st.Message, reason, message)
	}
	return nil
}

// conditionMessageIs checks a condition's status, reason and message exactly.
func conditionMessageIs(b *limbov1alpha1.Bundle, typ string, status metav1.ConditionStatus, reason, message string) error {
	if err := conditionIs(b, typ, status, reason); err != nil {
		return err
	}
	if c := meta.FindStatusCondition(b.Status.Conditions, typ); c.Message != message {
		return fmt.Errorf("%s is %s/%s with message %q, want message %q", typ, c.Status, c.Reason, c.Message, message)
	}
	return nil
}

// stringField reads a string field of an object.
func stringField(u *unstructured.Unstructured, fields ...string) string {
	s, _, _ := unstructured.NestedString(u.Object, fields...)
	return s
}

// noObject fails when the object exists.
func noObject(gvk schema.GroupVersionKind, ns, name string) func() error {
	return func() error {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u)
		switch {
		case err == nil:
			return fmt.Errorf("%s %s/%s exists", gvk.Kind, ns, name)
		case client.IgnoreNotFound(err) != nil:
			return err
		}
		return nil
	}
}

// isControlledBy reports whether u has a controller reference to b with
// blockOwnerDeletion.
func isControlledBy(u *unstructured.Unstructured, b *limbov1alpha1.Bundle) error {
	owner := metav1.GetControllerOf(u)
	if owner == nil || owner.UID != b.UID || owner.Kind != "Bundle" || owner.BlockOwnerDeletion == nil || !*owner.BlockOwnerDeletion {
		return fmt.Errorf("%s %s: owner references %+v, want a controller reference to Bundle %s (uid %s) with blockOwnerDeletion", u.GetKind(), u.GetName(), u.GetOwnerReferences(), b.Name, b.UID)
	}
	if got := u.GetLabels()[limbov1alpha1.LabelBundle]; got != b.Name {
		return fmt.Errorf("%s %s: label %s=%q, want %q", u.GetKind(), u.GetName(), limbov1alpha1.LabelBundle, got, b.Name)
	}
	return nil
}

var deploymentGVK = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}

// deployment is a Deployment template. The local control plane runs the
// deployment controller but no scheduler or kubelet: with 0 replicas it becomes
// Ready (kstatus Current) once the deployment controller has observed it.
func deployment(name string, replicas int64) map[string]any {
	labels := map[string]any{"app": name}
	return map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"replicas": replicas,
			"selector": map[string]any{"matchLabels": labels},
			"template": map[string]any{
				"metadata": map[string]any{"labels": labels},
				"spec": map[string]any{"containers": []any{map[string]any{
					"name": "main", "image": "registry.k8s.io/pause:3.10",
				}}},
			},
		},
	}
}

// readExample decodes examples/<dir>/<name> into into, strictly: a field the API
// does not know is a mistake in the example.
func readExample(t testing.TB, dir, name string, into any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(env.RepoRoot, "examples", dir, name))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, into); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// pluginExample is a plugin's example: examples/<dir>/secret.yaml, the
// credentials, and bundle.yaml, a Bundle with one plugin resource.
type pluginExample struct {
	Secret corev1.Secret
	Bundle limbov1alpha1.Bundle
	// Spec is the plugin resource's spec, decoded: tests point it at their
	// simulator before create.
	Spec map[string]any
}

func readPluginExample(t testing.TB, dir string) *pluginExample {
	t.Helper()
	e := &pluginExample{}
	readExample(t, dir, "secret.yaml", &e.Secret)
	readExample(t, dir, "bundle.yaml", &e.Bundle)
	res := e.Bundle.Spec.Resources
	if len(res) != 1 || res[0].Plugin == nil || res[0].Plugin.Spec == nil {
		t.Fatalf("%s/bundle.yaml: want one plugin resource, got %+v", dir, res)
	}
	if err := json.Unmarshal(res[0].Plugin.Spec.Raw, &e.Spec); err != nil {
		t.Fatal(err)
	}
	return e
}

// Resource is the example's plugin resource.
func (e *pluginExample) Resource() *limbov1alpha1.Resource { return &e.Bundle.Spec.Resources[0] }

// create writes Spec back and creates the Secret and the Bundle in ns.
func (e *pluginExample) create(t testing.TB, ns string) *limbov1alpha1.Bundle {
	t.Helper()
	raw, err := json.Marshal(e.Spec)
	if err != nil {
		t.Fatal(err)
	}
	e.Resource().Plugin.Spec.Raw = raw
	e.Secret.Namespace, e.Bundle.Namespace = ns, ns
	if err := env.Client.Create(context.Background(), &e.Secret); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(context.Background(), &e.Bundle); err != nil {
		t.Fatal(err)
	}
	return &e.Bundle
}

// readManifests reads the objects of a multi-document YAML file (an example's).
func readManifests(t testing.TB, path string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var objects []*unstructured.Unstructured
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := decoder.Decode(&u.Object); errors.Is(err, io.EOF) {
			return objects
		} else if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		objects = append(objects, u)
	}
}

// readBundleFile reads an example's Bundle, refusing unknown fields.
func readBundleFile(t testing.TB, path string) *limbov1alpha1.Bundle {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var b limbov1alpha1.Bundle
	if err := yaml.UnmarshalStrict(raw, &b); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &b
}

// schemalessCRD is the CRD of a namespaced kind of group, any content, served in
// versions (the first stored); its plural is the kind in lower case plus "s".
func schemalessCRD(group, kind string, versions ...string) *apiextensionsv1.CustomResourceDefinition {
	plural := strings.ToLower(kind) + "s"
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Singular: strings.ToLower(kind), Kind: kind, ListKind: kind + "List"},
			Scope: apiextensionsv1.NamespaceScoped,
		},
	}
	for i, v := range versions {
		crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: v, Served: true, Storage: i == 0,
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}}})
	}
	return crd
}
