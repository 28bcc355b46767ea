package it

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/limbo-dev/limbo/it/testenv"
	"github.com/limbo-dev/limbo/pkg/plugins/deorbit"
	"github.com/limbo-dev/limbo/pkg/remotecluster"
)

// A target that answers but is slow (a dying cluster's overloaded API server,
// whose large listings take longer than deorbit's request timeout) is not
// unreachable: while its listing of Services times out pass after pass, well
// past apiUnavailableTimeout, deorbit retries instead of giving up and leaking the
// load balancer; once the listing answers again it deletes the Service.
func TestDeorbitSlowTargetNotGivenUp(t *testing.T) {
	ns := env.Namespace(t)
	w := newWorkload(t, ns)
	lb := w.service("ingress", corev1.ServiceTypeLoadBalancer, deorbit.FinalizerLoadBalancerCleanup)
	slow := newSlowServicesProxy(t, w.remote)
	if err := env.Client.Create(context.Background(), remotecluster.NewKubeconfigSecret(ns, "slow-kubeconfig", slow.kubeconfig(t, w.remote))); err != nil {
		t.Fatal(err)
	}
	b := deorbitBundle(t, ns, "0s", map[string]any{"kubeConfigSecretRef": map[string]any{"name": "slow-kubeconfig"}, "apiUnavailableTimeout": "1s", "timeout": "1h"})
	waitArmed(t, b, "armed: 0 PVCs, 1 LoadBalancer Service")

	slow.hold.Store(true)
	deleteBundle(t, b, metav1.DeletePropagationBackground)
	// Each failed pass took a held listing's full request timeout, far past
	// apiUnavailableTimeout: a pass that gave up would say so at once.
	notGivenUp := func() {
		t.Helper()
		if gaveUp := eventsWith(t, b, deorbit.EventDeorbitTimedOut, ""); len(gaveUp) > 0 {
			t.Fatalf("deorbit gave up on a slow target: %s", gaveUp[0].Message)
		}
	}
	testenv.Eventually(t, 2*testenv.DefaultTimeout, func() error {
		notGivenUp()
		if len(eventsWith(t, b, deorbit.EventDeorbitFailed, "slow, not unreachable")) == 0 {
			return fmt.Errorf("no %s event of a slow target; events %+v", deorbit.EventDeorbitFailed, events(t, b))
		}
		return nil
	})
	// Two more listings held: the pass that held the first of them has ended.
	after := slow.held.Load() + 2
	testenv.Eventually(t, 2*testenv.DefaultTimeout, func() error {
		notGivenUp()
		if n := slow.held.Load(); n < after {
			return fmt.Errorf("%d listings of Services held, want %d", n, after)
		}
		return nil
	})
	notGivenUp()

	slow.release()
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		cur := lb.DeepCopy()
		if !w.get(cur) || cur.DeletionTimestamp == nil {
			return fmt.Errorf("Service %s not deleted yet", lb.Name)
		}
		return nil
	})
	w.releaseLoadBalancer(lb)
	waitEventContaining(t, b, corev1.EventTypeNormal, deorbit.EventDeorbitDone, "removed 1 LoadBalancer Services")
	waitBundleGone(t, b)
	notGivenUp()
}

// slowServicesProxy stands, over plain HTTP, before the second cluster's API
// server: it passes every request on, except that while hold is set a listing of
// the Services of all namespaces is held until its client gives up, or until
// release.
type slowServicesProxy struct {
	srv      *httptest.Server
	hold     atomic.Bool
	held     atomic.Int64 // listings held so far
	released chan struct{}
	once     sync.Once
}

func newSlowServicesProxy(t *testing.T, remote *testenv.RemoteCluster) *slowServicesProxy {
	t.Helper()
	cfg := remote.Cluster.RESTConfig()
	upstream, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	transport, err := rest.TransportFor(cfg) // its TLS; the credentials come with each request
	if err != nil {
		t.Fatal(err)
	}
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(upstream) }, Transport: transport}
	p := &slowServicesProxy{released: make(chan struct{})}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.hold.Load() && r.Method == http.MethodGet && r.URL.Path == "/api/v1/services" {
			p.held.Add(1)
			select {
			case <-r.Context().Done():
				return
			case <-p.released:
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(p.srv.Close)
	t.Cleanup(p.release) // before Close, which waits for the held requests
	return p
}

// release passes the held listings on, and those to come.
func (p *slowServicesProxy) release() {
	p.once.Do(func() {
		p.hold.Store(false)
		close(p.released)
	})
}

// kubeconfig is the second cluster's, aimed at the proxy.
func (p *slowServicesProxy) kubeconfig(t *testing.T, remote *testenv.RemoteCluster) []byte {
	t.Helper()
	kubeconfig, err := os.ReadFile(remote.Cluster.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfg.Clusters {
		c.Server, c.CertificateAuthorityData = p.srv.URL, nil
	}
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
