package remotecluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
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
		{"kubeconfig Secret problem", &Error{Secret: types.NamespacedName{Namespace: "a", Name: "b"}, Reason: ReasonSecretNotFound, Err: &url.Error{Err: syscall.ECONNREFUSED}}, false},
		{"anything else", errors.New("boom"), false},
	} {
		if got := IsUnreachable(tc.err); got != tc.want {
			t.Errorf("%s: IsUnreachable(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
