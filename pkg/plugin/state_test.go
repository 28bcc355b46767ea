package plugin_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugin"
)

func stateRequest(uid types.UID, resource string) plugin.Request {
	return plugin.Request{Bundle: &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{UID: uid}}, Resource: resource}
}

// Forget drops every resource state of one Bundle, and only of that Bundle (a UID
// that another begins with is another Bundle); a forgotten resource starts afresh.
func TestResourceStatesForget(t *testing.T) {
	s := plugin.ResourceStates[int]{New: func() *int { return new(int) }}
	*s.Of(stateRequest("a", "x")) = 1
	*s.Of(stateRequest("a", "y")) = 2
	*s.Of(stateRequest("ab", "x")) = 3
	s.Forget("a")
	if n := s.Len(); n != 1 {
		t.Errorf("%d states after forgetting Bundle a, want 1 (Bundle ab's)", n)
	}
	if v := *s.Of(stateRequest("ab", "x")); v != 3 {
		t.Errorf("Bundle ab's state = %d, want 3: forgetting a touched it", v)
	}
	if v := *s.Of(stateRequest("a", "x")); v != 0 {
		t.Errorf("Bundle a's state after Forget = %d, want a fresh 0", v)
	}
}

// forgetfulPlugin records the Bundles it is told to forget.
type forgetfulPlugin struct {
	fakePlugin
	forgot *[]types.UID
}

func (f forgetfulPlugin) ForgetBundle(uid types.UID) { *f.forgot = append(*f.forgot, uid) }

// The registry tells the plugins that keep state (Forgetters) of a Bundle that is
// gone, and no others.
func TestRegistryForgetBundle(t *testing.T) {
	var forgot []types.UID
	r := newRegistry(t, forgetfulPlugin{fakePlugin: named("stateful"), forgot: &forgot}, named("stateless"))
	r.ForgetBundle("u1")
	if len(forgot) != 1 || forgot[0] != "u1" {
		t.Errorf("forgotten = %v, want [u1]", forgot)
	}
	var none *plugin.Registry
	none.ForgetBundle("u2") // a controller without plugins
}
