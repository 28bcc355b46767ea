package it

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// What the API server answers about a Secret may quote its values: a
// server-side apply that does not fit the kind's schema prints the value
// (".immutable: expected boolean, got &{aHVudGVyMiE=}"), and an admission
// policy's message may quote anything of the object, in a refusal or a warning.
// The Bundle's status, its events and limbo's log are read by more people than
// the Secret, so for a Secret limbo keeps the reason (Invalid, Forbidden, ...)
// and the fields named, and withholds the text: for a value injected from
// another Secret (Secret to Secret is allowed), for a template's own data, and
// for the warnings of its applies.
func TestSecretErrorTextIsWithheld(t *testing.T) {
	env.WithoutController(t)
	ns := env.Namespace(t)
	proc := env.ControllerProcess(t, "secret-withheld", "--namespaces", ns, "--leader-elect=false")

	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	secret := func(name string, fields map[string]any) map[string]any {
		obj := map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": name}}
		for k, v := range fields {
			obj[k] = v
		}
		return obj
	}
	// Every text that must not leave the Secrets, as stored and as decoded.
	var secrets []string
	for _, s := range []string{"injected-pw-1", "own-value-2", "denied-value-3", "warned-value-4"} {
		secrets = append(secrets, s, b64(s))
	}
	policy(t, ns, "denied", admissionregistrationv1.Deny)
	policy(t, ns, "warned", admissionregistrationv1.Warn)

	ref := limbov1alpha1.Reference{Name: "pw", Resource: "source", Path: "data.password"}
	b := createBundle(t, ns, "withheld",
		objectResource(t, "source", secret("source", map[string]any{"data": map[string]any{"password": b64("injected-pw-1")}})),
		// A value injected from a Secret where the schema wants a boolean.
		objectResource(t, "sink", secret("sink", map[string]any{"immutable": "!{pw}"}), ref),
		// The template's own data, in a field of the wrong type.
		objectResource(t, "own", secret("own", map[string]any{"stringData": map[string]any{"x": map[string]any{"v": "own-value-2"}}})),
		// A key the API server refuses: the field it names is kept.
		objectResource(t, "badkey", secret("badkey", map[string]any{"data": map[string]any{"bad key": b64("x")}})),
		// Admission policies that quote the value in their message.
		objectResource(t, "denied", secret("denied", map[string]any{"data": map[string]any{"x": b64("denied-value-3")}})),
		objectResource(t, "warned", secret("warned", map[string]any{"data": map[string]any{"x": b64("warned-value-4")}})),
	)
	withheld := "its message is withheld"
	cur := waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		for _, want := range []struct{ name, reason, text string }{
			{"sink", limbov1alpha1.ReasonInvalid, withheld},
			{"own", limbov1alpha1.ReasonInvalid, withheld},
			{"badkey", limbov1alpha1.ReasonInvalid, "data[bad key]: Invalid value"},
			{"denied", limbov1alpha1.ReasonInvalid, withheld},
		} {
			if err := resourceIs(cur, want.name, limbov1alpha1.ResourceError, want.reason); err != nil {
				return err
			}
			if st := resourceStatus(cur, want.name); !strings.Contains(st.Message, want.text) || !strings.Contains(st.Message, fmt.Sprintf("apply Secret %q", want.name)) {
				return fmt.Errorf("resource %q: message %q, want one naming the Secret and saying %q", want.name, st.Message, want.text)
			}
		}
		if err := resourceIs(cur, "warned", limbov1alpha1.ResourceReady, ""); err != nil {
			return err
		}
		return conditionIs(cur, limbov1alpha1.ConditionStalled, metav1.ConditionTrue, limbov1alpha1.ReasonResourceError)
	})
	waitEventContaining(t, b, corev1.EventTypeWarning, limbov1alpha1.EventAPIWarning, `resource "warned"`, "withheld")
	waitEventContaining(t, b, corev1.EventTypeWarning, limbov1alpha1.ReasonInvalid, `resource "sink"`, withheld)
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if lines := logLinesContaining(t, proc.LogPath, `"resource":"sink"`); len(lines) == 0 {
			return fmt.Errorf("no log line of resource sink yet")
		}
		return nil
	})

	status, err := json.Marshal(cur.Status)
	if err != nil {
		t.Fatal(err)
	}
	logText, err := os.ReadFile(proc.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	var eventText strings.Builder
	for _, e := range events(t, b) {
		fmt.Fprintf(&eventText, "%s/%s: %s\n", e.Type, e.Reason, e.Message)
	}
	for _, s := range secrets {
		if strings.Contains(string(status), s) {
			t.Errorf("the Bundle's status holds %q:\n%s", s, status)
		}
		if strings.Contains(eventText.String(), s) {
			t.Errorf("an event holds %q:\n%s", s, eventText.String())
		}
		if lines := logLinesContaining(t, proc.LogPath, s); len(lines) > 0 {
			t.Errorf("limbo's log holds %q:\n%s", s, strings.Join(lines, "\n"))
		}
	}
	if !strings.Contains(string(logText), withheld) {
		t.Errorf("limbo's log says nothing of a withheld message")
	}
}

// policy installs a ValidatingAdmissionPolicy that, with action, answers an
// apply of Secret name in ns with a message that quotes its data.x, decoded.
func policy(t testing.TB, ns, name string, action admissionregistrationv1.ValidationAction) {
	t.Helper()
	ctx := context.Background()
	policyName := "quote-" + name + "-" + ns
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: policyName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"secrets"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{
				Expression:        fmt.Sprintf("object.metadata.namespace != %q || object.metadata.name != %q", ns, name),
				MessageExpression: "'quoted by the test: ' + string(object.data.x)",
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: policyName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: policyName,
			ValidationActions: []admissionregistrationv1.ValidationAction{action}},
	}
	t.Cleanup(func() {
		for _, o := range []client.Object{binding, p} {
			if err := env.Client.Delete(context.Background(), o); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("delete policy: %v", err)
			}
		}
	})
	for _, o := range []client.Object{p, binding} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatalf("create %T: %v", o, err)
		}
	}
	// The policy takes effect asynchronously: a dry run tells, by its error or
	// its warning.
	var mu sync.Mutex
	var warnings []string
	config := rest.CopyConfig(env.Config)
	config.WarningHandler = warningFunc(func(text string) {
		mu.Lock()
		defer mu.Unlock()
		warnings = append(warnings, text)
	})
	c, err := client.New(config, client.Options{Scheme: env.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	probe := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{"x": []byte("probe")}}
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		err := c.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		warned := err != nil && strings.Contains(err.Error(), "quoted by the test")
		mu.Lock()
		for _, w := range warnings {
			warned = warned || strings.Contains(w, "quoted by the test")
		}
		mu.Unlock()
		if !warned {
			return fmt.Errorf("dry-run create of Secret %s: %v; the policy is not in force yet", name, err)
		}
		return nil
	})
}

// warningFunc is a rest.WarningHandler.
type warningFunc func(text string)

func (f warningFunc) HandleWarningHeader(code int, _ string, text string) {
	if code == 299 {
		f(text)
	}
}
