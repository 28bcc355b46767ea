package bundle

import (
	"context"
	"fmt"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/bundlespec"
)

var crdNow = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

// widgetCRD is the CRD of example.com's Widget, serving the versions served,
// established at establishedAt (zero: not established).
func widgetCRD(establishedAt time.Time, served ...string) *apiextensionsv1.CustomResourceDefinition {
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "Widget", Plural: "widgets"}, Scope: apiextensionsv1.NamespaceScoped},
	}
	for _, v := range served {
		crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: v, Served: true, Storage: v == served[0]})
	}
	if !establishedAt.IsZero() {
		crd.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue, LastTransitionTime: metav1.NewTime(establishedAt)}}
	}
	return crd
}

// The CRD events that pass Bundles again: a CRD that starts serving a kind or
// a version (crdServing), not the CRDs listed at the start, nor other changes;
// a CRD that stops serving one (crdStopsServing).
func TestCRDPredicates(t *testing.T) {
	notYet, v1 := widgetCRD(time.Time{}, "v1"), widgetCRD(crdNow, "v1")
	v1v2, v2 := widgetCRD(crdNow, "v1", "v2"), widgetCRD(crdNow, "v2")
	annotated := v1.DeepCopy()
	annotated.Annotations = map[string]string{"x": "y"}
	for _, tc := range []struct {
		name string
		got  bool
		want bool
	}{
		{"created established", crdServing.Create(event.CreateEvent{Object: v1}), true},
		{"created not established yet", crdServing.Create(event.CreateEvent{Object: notYet}), false},
		{"listed at the start", crdServing.Create(event.CreateEvent{Object: v1, IsInInitialList: true}), false},
		{"established now", crdServing.Update(event.UpdateEvent{ObjectOld: notYet, ObjectNew: v1}), true},
		{"serves a new version", crdServing.Update(event.UpdateEvent{ObjectOld: v1, ObjectNew: v1v2}), true},
		{"another change", crdServing.Update(event.UpdateEvent{ObjectOld: v1, ObjectNew: annotated}), false},
		{"deleted", crdServing.Delete(event.DeleteEvent{Object: v1}), false},

		{"stops: deleted", crdStopsServing.Delete(event.DeleteEvent{Object: v1}), true},
		{"stops: serves a version no more", crdStopsServing.Update(event.UpdateEvent{ObjectOld: v1v2, ObjectNew: v1}), true},
		{"stops: one version for another", crdStopsServing.Update(event.UpdateEvent{ObjectOld: v1, ObjectNew: v2}), true},
		{"stops: serves a new version", crdStopsServing.Update(event.UpdateEvent{ObjectOld: v1, ObjectNew: v1v2}), false},
		{"stops: another change", crdStopsServing.Update(event.UpdateEvent{ObjectOld: v1, ObjectNew: annotated}), false},
		{"stops: created", crdStopsServing.Create(event.CreateEvent{Object: v1}), false},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: passed = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

func bundleOf(name string, templates ...string) *limbov1alpha1.Bundle {
	b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
	for i, tmpl := range templates {
		b.Spec.Resources = append(b.Spec.Resources, limbov1alpha1.Resource{Name: fmt.Sprintf("r%d", i), Object: &runtime.RawExtension{Raw: []byte(tmpl)}})
	}
	return b
}

func crdReconciler(t *testing.T, objects ...client.Object) *Reconciler {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{limbov1alpha1.AddToScheme, apiextensionsv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objects...).Build()
	return &Reconciler{Client: c, Clock: clocktesting.NewFakePassiveClock(crdNow)}
}

// A CRD that starts serving a kind passes every Bundle whose templates name
// the kind (whatever the version, whatever their status says), and no other.
func TestBundlesNamingKindOf(t *testing.T) {
	r := crdReconciler(t,
		bundleOf("uses-v2", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}`, `{"apiVersion":"example.com/v2","kind":"Widget","metadata":{"name":"w"}}`),
		bundleOf("other-group", `{"apiVersion":"example.org/v1","kind":"Widget","metadata":{"name":"w"}}`),
		bundleOf("configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}`),
		&limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "plugin", Namespace: "ns"}, Spec: limbov1alpha1.BundleSpec{Resources: []limbov1alpha1.Resource{{Name: "p", Plugin: &limbov1alpha1.PluginResource{Name: "x"}}}}},
	)
	got := r.bundlesNamingKindOf(context.Background(), widgetCRD(crdNow, "v1", "v2"))
	if len(got) != 1 || got[0].String() != "ns/uses-v2" {
		t.Errorf("Bundles passed: %v, want [ns/uses-v2]", got)
	}
	if since := r.crdsServing.since("widgets.example.com", time.Time{}); !since.Equal(crdNow) {
		t.Errorf("the CRD's start of serving remembered as %v, want %v", since, crdNow)
	}
}

// A kind a Bundle calls unknown is coming while a CRD serving its version
// started serving it less than kindComingWindow ago; after that the error is
// a spec error like any other.
func TestKindComing(t *testing.T) {
	b := bundleOf("b", `{"apiVersion":"example.com/v2","kind":"Widget","metadata":{"name":"w"}}`)
	unknown := bundlespec.Errors{{Resource: "r0", Reason: limbov1alpha1.ReasonUnknownKind}}
	for _, tc := range []struct {
		name   string
		crd    *apiextensionsv1.CustomResourceDefinition
		seenAt time.Time // when this process saw the CRD start serving (zero: never)
		errs   bundlespec.Errors
		want   bool
	}{
		{"established a moment ago", widgetCRD(crdNow.Add(-2*time.Second), "v1", "v2"), time.Time{}, unknown, true},
		{"not established", widgetCRD(time.Time{}, "v1", "v2"), time.Time{}, unknown, false},
		{"the version is not served", widgetCRD(crdNow.Add(-2*time.Second), "v1"), time.Time{}, unknown, false},
		{"established long ago", widgetCRD(crdNow.Add(-time.Hour), "v1", "v2"), time.Time{}, unknown, false},
		{"established long ago, a version added a moment ago", widgetCRD(crdNow.Add(-time.Hour), "v1", "v2"), crdNow.Add(-2 * time.Second), unknown, true},
		{"another spec error", widgetCRD(crdNow.Add(-2*time.Second), "v1", "v2"), time.Time{}, bundlespec.Errors{{Resource: "r0", Reason: limbov1alpha1.ReasonInvalidObject}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := crdReconciler(t, tc.crd)
			if !tc.seenAt.IsZero() {
				r.crdsServing.seen(tc.crd.Name, tc.seenAt)
			}
			if got := r.kindComing(context.Background(), b, tc.errs); got != tc.want {
				t.Errorf("kindComing = %v, want %v", got, tc.want)
			}
		})
	}
}

// The CRD cache keeps what limbo reads and drops the schemas.
func TestTrimCRDForCache(t *testing.T) {
	crd := widgetCRD(crdNow, "v1", "v2")
	crd.Annotations = map[string]string{limbov1alpha1.AnnotationReadyWhenFieldPath: "x", lastAppliedAnnotation: "{...}"}
	crd.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	crd.Spec.Versions[0].Schema = &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}}
	crd.Spec.Versions[0].AdditionalPrinterColumns = []apiextensionsv1.CustomResourceColumnDefinition{{Name: "age"}}
	crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter}
	out, err := TrimCRDForCache(crd)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*apiextensionsv1.CustomResourceDefinition)
	if got.Spec.Versions[0].Schema != nil || got.Spec.Versions[0].AdditionalPrinterColumns != nil || got.Spec.Conversion != nil || got.ManagedFields != nil {
		t.Errorf("kept what limbo does not read: %+v", got.Spec)
	}
	if _, ok := got.Annotations[lastAppliedAnnotation]; ok || got.Annotations[limbov1alpha1.AnnotationReadyWhenFieldPath] != "x" {
		t.Errorf("annotations %v, want the readiness rule and not kubectl's copy", got.Annotations)
	}
	if servedVersions(got) != "v1,v2" || !established(got) || got.Spec.Group != "example.com" || got.Spec.Names.Kind != "Widget" {
		t.Errorf("lost what limbo reads: %+v", got)
	}
}

// What crdsServing remembers goes once it is older than kindComingWindow, when
// it tells nothing any more: a process that saw thousands of CRDs change kept
// them all.
func TestCRDsServingForgetsOldTimes(t *testing.T) {
	var c crdsServing
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	c.seen("old.example.com", start)
	c.seen("new.example.com", start.Add(kindComingWindow+time.Second))
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, kept := c.at["old.example.com"]; kept || len(c.at) != 1 {
		t.Errorf("remembered %v, want only new.example.com", c.at)
	}
}
