package remotecluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"syscall"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

func TestIsUnreachable(t *testing.T) {
	configMaps := schema.GroupResource{Resource: "configmaps"}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"not found", apierrors.NewNotFound(configMaps, "x"), false},
		{"forbidden", apierrors.NewForbidden(configMaps, "x", errors.New("no")), false},
		{"conflict", apierrors.NewConflict(configMaps, "x", errors.New("changed")), false},
		{"service unavailable", apierrors.NewServiceUnavailable("etcd down"), true},
		{"gateway timeout", apierrors.NewTimeoutError("slow", 1), true},
		{"server timeout", apierrors.NewServerTimeout(configMaps, "list", 1), true},
		// What client-go makes of a proxy's 502 before a dead API server.
		{"bad gateway", apierrors.NewGenericServerResponse(http.StatusBadGateway, "list", configMaps, "", "<html>502 Bad Gateway</html>", 0, true), true},
		{"internal error", apierrors.NewInternalError(errors.New("boom")), false},
		{"connection refused", &url.Error{Op: "Get", URL: "https://10.0.0.1", Err: syscall.ECONNREFUSED}, true},
		{"connection reset, wrapped", fmt.Errorf("list PVCs: %w", &url.Error{Op: "Get", URL: "https://10.0.0.1", Err: syscall.ECONNRESET}), true},
		{"dropped connection", &url.Error{Op: "Get", URL: "https://10.0.0.1", Err: io.ErrUnexpectedEOF}, true},
		{"deadline", fmt.Errorf("list: %w", context.DeadlineExceeded), true},
		// A network error that no URL error wraps (a resolver's, a dialer's).
		{"host not resolved", &net.DNSError{Err: "no such host", Name: "remote.example", IsNotFound: true}, true},
		// A certificate that is not for the host, or not valid, is a server
		// that answered: the kubeconfig is wrong, the cluster is not gone.
		{"certificate for another host", &url.Error{Op: "Get", URL: "https://10.0.0.1", Err: x509.HostnameError{Certificate: &x509.Certificate{}, Host: "10.0.0.1"}}, false},
		{"certificate expired", &url.Error{Op: "Get", URL: "https://10.0.0.1", Err: x509.CertificateInvalidError{Cert: &x509.Certificate{}, Reason: x509.Expired}}, false},
		{"kubeconfig Secret problem", &Error{Secret: types.NamespacedName{Namespace: "a", Name: "b"}, Reason: ReasonSecretNotFound, Err: &url.Error{Err: syscall.ECONNREFUSED}}, false},
		{"anything else", errors.New("boom"), false},
	} {
		if got := IsUnreachable(tc.err); got != tc.want {
			t.Errorf("%s: IsUnreachable(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

// A server that answers, only not as the kubeconfig expects — plain HTTP where
// it says https, a TLS handshake the server refuses (a client certificate
// required) — is a broken kubeconfig, not a cluster that is gone: deorbit
// retries it until its timeout instead of giving up after a few minutes of
// "unreachable" and leaking what the target holds. The errors are those
// net/http really returns.
func TestIsUnreachableMisconfiguredTarget(t *testing.T) {
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer plain.Close()
	mutual := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	mutual.TLS = &tls.Config{ClientAuth: tls.RequireAnyClientCert}
	mutual.StartTLS()
	defer mutual.Close()
	closed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	closed.Close()
	trusting := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // test servers' certificates
	for _, tc := range []struct {
		name string
		url  string
		want bool
	}{
		{"https to a plain HTTP server", strings.Replace(plain.URL, "http://", "https://", 1), false},
		{"a client certificate required", mutual.URL, false},
		{"connection refused", closed.URL, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := trusting.Get(tc.url)
			if err == nil {
				resp.Body.Close()
				t.Fatal("the request succeeded; the test needs it to fail")
			}
			if got := IsUnreachable(err); got != tc.want {
				t.Errorf("IsUnreachable(%v) = %v, want %v", err, got, tc.want)
			}
		})
	}
}
