package remotecluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"net/url"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// IsUnreachable reports whether err says that the remote API server could not be
// talked to, rather than that it answered no: a connection refused or reset, a
// timeout, a DNS failure, a dropped connection, or the server itself saying it is
// unavailable (502, 503, 504, server timeout). A Secret or kubeconfig problem (*Error),
// a certificate the kubeconfig's CA does not trust, a server answering otherwise
// than the kubeconfig expects (answeredOtherwise), and any other answer (NotFound,
// Forbidden, Conflict, ...) are not.
//
// client-go returns connection errors as *url.Error, not as API status errors, so
// apierrors.IsServiceUnavailable alone misses exactly the case of a cluster that is
// gone.
func IsUnreachable(err error) bool {
	if err == nil {
		return false
	}
	var secretErr *Error
	if errors.As(err, &secretErr) {
		return false
	}
	var unknownAuthority x509.UnknownAuthorityError
	var invalidCert x509.CertificateInvalidError
	var hostname x509.HostnameError
	if errors.As(err, &unknownAuthority) || errors.As(err, &invalidCert) || errors.As(err, &hostname) || answeredOtherwise(err) {
		return false
	}
	if apierrors.IsServiceUnavailable(err) || apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) {
		return true
	}
	// A proxy or load balancer in front of a dead API server answers 502, which
	// client-go reports with no reason of its own: the status code says it.
	var status apierrors.APIStatus
	if errors.As(err, &status) && saysUnavailable(int(status.Status().Code)) {
		return true
	}
	if errors.Is(err, context.DeadlineExceeded) || utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err) {
		return true
	}
	var netErr net.Error
	var urlErr *url.Error
	return errors.As(err, &netErr) || errors.As(err, &urlErr)
}

// answeredOtherwise reports whether err says that something answered at the
// target's address, only not as the kubeconfig expects: plain HTTP where it
// says https, bytes that are no TLS, or a TLS alert the server sent (a client
// certificate it requires, a protocol version it refuses). A broken
// kubeconfig, which its owner can mend, not a cluster that is gone; and
// net/http reports each as a *url.Error around a net.Error, like a dead one.
func answeredOtherwise(err error) bool {
	var header tls.RecordHeaderError
	var op *net.OpError
	return errors.Is(err, http.ErrSchemeMismatch) || errors.As(err, &header) || errors.As(err, &op) && op.Op == "remote error"
}
