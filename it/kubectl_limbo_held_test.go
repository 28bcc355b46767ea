package it

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// An orphan dropped while its Bundle is not Ready is held: neither stamped nor
// labelled, only listed in the Bundle's status, and deleted at once (it has no
// delay) when the Bundle becomes Ready. kubectl limbo cancel keeps it all the
// same. A stamped orphan held the same way is expedited, and expedite says what
// holds it; it goes once the Bundle is Ready, which shows that the Bundle
// decided its orphans then, and left the cancelled one alone.
func TestKubectlLimboHeldOrphan(t *testing.T) {
	t.Parallel()
	k := newKubectlLimbo(t)
	ns := env.Namespace(t)
	engine := objectResource(t, "engine", gadget("engine"))
	old := objectResource(t, "old", configMap("old", map[string]any{"a": "b"}, nil))
	stamped := objectResource(t, "stamped", configMap("stamped", map[string]any{"a": "b"},
		map[string]any{limbov1alpha1.AnnotationDeletionDelay: "1h"}))
	b := createBundle(t, ns, "shop", engine, old, stamped)
	setGadgetPhase(t, ns, "engine", "Running")
	waitReady(t, b)

	updateBundle(t, b, engine, old)
	waitInLimbo(t, configMapGVK, ns, "stamped")

	// The engine's readiness rule stops holding: the Bundle's deletions wait.
	setGadgetPhase(t, ns, "engine", "Degraded")
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error { return conditionIs(cur, "Ready", metav1.ConditionFalse, "") })
	updateBundle(t, b, engine)
	const held = "waiting for every resource of the Bundle to be Ready"
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		for _, name := range []string{"old", "stamped"} {
			if err := listedWithMessage(cur, "ConfigMap", name, held); err != nil {
				return err
			}
		}
		return nil
	})
	oldObj := getObject(t, configMapGVK, ns, "old")
	if err := notInLimbo(oldObj); err != nil {
		t.Fatalf("the held orphan is marked: %v", err)
	}
	if table := k.must(t, "pending", "-n", ns); !regexpMatches(`(?m)^ConfigMap +old +shop +<none> +held +`+held, table) {
		t.Errorf("pending does not show old held:\n%s", table)
	}

	// cancel's completion offers the held orphan, which only the Bundle's status
	// lists, with the stamped one. (KUBECONFIG is set: the word completed is
	// the last argument.)
	offered, completeErr, code := k.exec(t, k.bin, "__complete", "cancel", "-n", ns, "configmap/")
	if code != 0 || !sameSet(strings.Fields(offered), []string{"configmap/old", "configmap/stamped", ":4"}) {
		t.Errorf("completing cancel configmap/: exit %d, stderr %q, offers %q; want configmap/old and configmap/stamped", code, completeErr, offered)
	}

	// Not fatal: what becomes of an orphan whose cancel failed is the point.
	stdout, stderr, code := k.run(t, "cancel", "configmap/old", "-n", ns)
	want := `configmap/old: deletion cancelled; removed owner reference to Bundle "shop", label limbo.dev/bundle=shop.
No Bundle manages it now; to bring it back under a Bundle, declare it there with the annotation limbo.dev/adopt: "true".
`
	if code != 0 || stdout != want {
		t.Errorf("cancel configmap/old: exit %d, stderr %q, stdout:\n%s\nwant:\n%s", code, stderr, stdout, want)
	}

	stdout = k.must(t, "expedite", "configmap/stamped", "-n", ns)
	if !strings.Contains(stdout, ": due now; the controller deletes it at its next pass unless something holds it (kubectl limbo pending shows what)\n") ||
		!strings.HasSuffix(stdout, fmt.Sprintf("\nBundle %s/shop reports: %s\n", ns, held)) {
		t.Errorf("expedite configmap/stamped prints:\n%s\nwant the Bundle's report %q", stdout, held)
	}
	// Held, the expedited orphan shows how long it has been in limbo (seconds),
	// not the stamp moved back by its 1h delay.
	if wide := k.must(t, "pending", "-n", ns, "-o", "wide"); !regexpMatches(`(?m)^ConfigMap +stamped +shop +\S+ +held +1h +\d+s +`, wide) {
		t.Errorf("pending -o wide has no row for stamped with DELAY 1h and IN-LIMBO in seconds:\n%s", wide)
	}
	stampedUID := string(getObject(t, configMapGVK, ns, "stamped").GetUID())
	// The pass that the expedite started lists stamped as due, and held: the
	// wait below starts once that pass has decided, not before it runs.
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		for _, pd := range cur.Status.PendingDeletions {
			if pd.Kind == "ConfigMap" && pd.Name == "stamped" && (pd.DeleteAfter == nil || time.Now().Before(pd.DeleteAfter.Time)) {
				return fmt.Errorf("stamped is not listed as due yet: %+v", pd)
			}
		}
		return listedWithMessage(cur, "ConfigMap", "stamped", held)
	})
	testenv.Consistently(t, 2*time.Second, existsWithUID(t, configMapGVK, ns, "stamped", stampedUID))

	setGadgetPhase(t, ns, "engine", "Running")
	testenv.Eventually(t, testenv.DefaultTimeout, noObject(configMapGVK, ns, "stamped"))
	waitReady(t, b)
	testenv.Consistently(t, 3*time.Second, existsWithUID(t, configMapGVK, ns, "old", string(oldObj.GetUID())))
	kept := getObject(t, configMapGVK, ns, "old")
	if err := notInLimbo(kept); err != nil {
		t.Error(err)
	}
	if len(kept.GetOwnerReferences()) != 0 || kept.GetLabels()[limbov1alpha1.LabelBundle] != "" {
		t.Errorf("old still belongs to the Bundle: owner references %v, labels %v", kept.GetOwnerReferences(), kept.GetLabels())
	}
}

// listedWithMessage fails unless the Bundle's pendingDeletions lists the object
// with message.
func listedWithMessage(b *limbov1alpha1.Bundle, kind, name, message string) error {
	for _, pd := range b.Status.PendingDeletions {
		if pd.Kind == kind && pd.Name == name {
			if pd.Message != message {
				return fmt.Errorf("pendingDeletions lists %s %s with message %q, want %q", kind, name, pd.Message, message)
			}
			return nil
		}
	}
	return fmt.Errorf("pendingDeletions does not list %s %s: %+v", kind, name, b.Status.PendingDeletions)
}
