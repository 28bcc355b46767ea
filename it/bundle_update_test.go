package it

import (
	"context"
	"encoding/base64"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// Changing a template updates the live object in place (same UID). limbo applies
// with server-side apply, so a field removed from the template is removed from
// the live object, while a field someone else owns is left alone.
func TestUpdateChangesLiveObject(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	settings := func(data map[string]any, labels map[string]any) map[string]any {
		cm := configMap("settings", data, map[string]any{"team": "a"})
		if labels != nil {
			cm["metadata"].(map[string]any)["labels"] = labels
		}
		return cm
	}
	b := createBundle(t, ns, "update",
		objectResource(t, "settings", settings(map[string]any{"mode": "safe", "level": "1"}, map[string]any{"tier": "gold"})))
	waitReady(t, b)
	before := getObject(t, configMapGVK, ns, "settings")

	// Someone else adds a field of their own: server-side apply keeps it, since
	// limbo never owned it.
	patch := []byte(`{"data":{"theirs":"kept"}}`)
	if err := env.Client.Patch(context.Background(), before.DeepCopy(), client.RawPatch(types.MergePatchType, patch), client.FieldOwner("someone-else")); err != nil {
		t.Fatal(err)
	}

	updateBundle(t, b,
		objectResource(t, "settings", settings(map[string]any{"mode": "fast"}, nil)))
	waitReady(t, b)
	after := waitObject(t, configMapGVK, ns, "settings", func(u *unstructured.Unstructured) error {
		data, _, _ := unstructured.NestedStringMap(u.Object, "data")
		if fmt.Sprint(data) != fmt.Sprint(map[string]string{"mode": "fast", "theirs": "kept"}) {
			return fmt.Errorf("data = %v, want mode=fast (changed), no level (removed from the template), theirs=kept (not limbo's)", data)
		}
		if _, ok := u.GetLabels()["tier"]; ok {
			return fmt.Errorf("labels = %v: label tier was removed from the template but is still there", u.GetLabels())
		}
		return nil
	})
	if after.GetUID() != before.GetUID() {
		t.Errorf("the object was re-created (uid %s, was %s), want an update in place", after.GetUID(), before.GetUID())
	}
	if after.GetAnnotations()["team"] != "a" {
		t.Errorf("annotations = %v, want team=a kept", after.GetAnnotations())
	}
	if err := isControlledBy(after, getBundle(t, b)); err != nil {
		t.Error(err)
	}
	waitEvent(t, b, "Normal", "Updated", `resource "settings": ConfigMap settings updated`)
}

// A value that a dependent reads from its dependency follows the dependency:
// changing the dependency's template updates the dependent.
func TestUpdatePropagatesThroughReferences(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	resources := func(host string) []limbov1alpha1.Resource {
		return []limbov1alpha1.Resource{
			objectResource(t, "db", configMap("db", map[string]any{"host": host}, nil)),
			objectResource(t, "app", configMap("app", map[string]any{"url": "postgres://!{host}/"}, nil),
				limbov1alpha1.Reference{Name: "host", Resource: "db", Path: "data.host"}),
		}
	}
	b := createBundle(t, ns, "propagate", resources("db-1.internal")...)
	waitReady(t, b)
	if got := stringField(getObject(t, configMapGVK, ns, "app"), "data", "url"); got != "postgres://db-1.internal/" {
		t.Fatalf("app data.url = %q, want postgres://db-1.internal/", got)
	}
	updateBundle(t, b, resources("db-2.internal")...)
	waitObject(t, configMapGVK, ns, "app", func(u *unstructured.Unstructured) error {
		if got := stringField(u, "data", "url"); got != "postgres://db-2.internal/" {
			return fmt.Errorf("app data.url = %q, want postgres://db-2.internal/", got)
		}
		return nil
	})
	waitReady(t, b)
}

// A key removed from a Secret template's stringData is removed from the live
// Secret, as a key removed from its data is. The API server stores stringData as
// data and keeps no stringData, so a server-side apply of stringData could never
// remove a key it once wrote (kubernetes/kubernetes#108008): the credential a user
// took out of the Bundle would stay in the Secret, the Bundle Ready.
func TestUpdateRemovesSecretStringDataKey(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	secret := func(stringData map[string]any) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "credentials"},
			// stringData wins over data for a key in both, as the API server has it.
			"data":       map[string]any{"user": base64.StdEncoding.EncodeToString([]byte("admin")), "token": base64.StdEncoding.EncodeToString([]byte("old"))},
			"stringData": stringData}
	}
	wantData := func(want map[string]string) func(*unstructured.Unstructured) error {
		return func(u *unstructured.Unstructured) error {
			encoded, _, _ := unstructured.NestedStringMap(u.Object, "data")
			got := map[string]string{}
			for k, v := range encoded {
				decoded, err := base64.StdEncoding.DecodeString(v)
				if err != nil {
					return fmt.Errorf("data.%s = %q: %v", k, v, err)
				}
				got[k] = string(decoded)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				return fmt.Errorf("data = %v, want %v", got, want)
			}
			return nil
		}
	}
	b := createBundle(t, ns, "secret", objectResource(t, "credentials", secret(map[string]any{"password": "s3cret", "token": "new"})))
	waitReady(t, b)
	live := waitObject(t, secretGVK, ns, "credentials", wantData(map[string]string{"user": "admin", "password": "s3cret", "token": "new"}))

	// Someone else's key is theirs: limbo never wrote it.
	patch := []byte(`{"data":{"theirs":"a2VwdA=="}}`)
	if err := env.Client.Patch(context.Background(), live, client.RawPatch(types.MergePatchType, patch), client.FieldOwner("someone-else")); err != nil {
		t.Fatal(err)
	}
	updateBundle(t, b, objectResource(t, "credentials", secret(map[string]any{"token": "new"})))
	waitObject(t, secretGVK, ns, "credentials", wantData(map[string]string{"user": "admin", "token": "new", "theirs": "kept"}))
	waitReady(t, b)
}

// The user guide's recipe for rolling a Deployment's pods out when their
// ConfigMap changes: a pod-template annotation that references the ConfigMap's
// resourceVersion changes with it, so the Deployment gets a new pod template.
func TestRolloutOnConfigChangeRecipe(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	resources := func(mode string) []limbov1alpha1.Resource {
		web := deployment("web", 0)
		tmpl := web["spec"].(map[string]any)["template"].(map[string]any)
		tmpl["metadata"].(map[string]any)["annotations"] = map[string]any{"example.com/config-version": "!{configVersion}"}
		tmpl["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["envFrom"] = []any{map[string]any{"configMapRef": map[string]any{"name": "app-config"}}}
		return []limbov1alpha1.Resource{
			objectResource(t, "app-config", configMap("app-config", map[string]any{"mode": mode}, nil)),
			objectResource(t, "web", web, limbov1alpha1.Reference{Name: "configVersion", Resource: "app-config", Path: "metadata.resourceVersion"}),
		}
	}
	podVersion := func(u *unstructured.Unstructured) string {
		v, _, _ := unstructured.NestedString(u.Object, "spec", "template", "metadata", "annotations", "example.com/config-version")
		return v
	}
	b := createBundle(t, ns, "rollout", resources("safe")...)
	waitReady(t, b)
	before := getObject(t, deploymentGVK, ns, "web")
	if got, want := podVersion(before), getObject(t, configMapGVK, ns, "app-config").GetResourceVersion(); got != want {
		t.Fatalf("pod template config-version = %q, want the ConfigMap's resourceVersion %q", got, want)
	}

	updateBundle(t, b, resources("fast")...)
	waitObject(t, deploymentGVK, ns, "web", func(u *unstructured.Unstructured) error {
		if want := getObject(t, configMapGVK, ns, "app-config").GetResourceVersion(); podVersion(u) != want || u.GetGeneration() == before.GetGeneration() {
			return fmt.Errorf("pod template config-version = %q (generation %d), want the changed ConfigMap's %q in a new generation", podVersion(u), u.GetGeneration(), want)
		}
		return nil
	})
	waitReady(t, b)
}
