package remotecluster

import (
	"context"
	"crypto/x509"
	"errors"
	"net"
	"net/url"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// IsUnreachable reports whether err says that the remote API server could not be
// talked to, rather than that it answered no: a connection refused or reset, a
// timeout, a DNS failure, a dropped connection, or the server itself saying it is
// unavailable (502, 503, 504, server timeout). A Secret or kubeconfig problem (*Error),
// a certificate the kubeconfig's CA does not trust, and any other answer (NotFound,
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
	if errors.As(err, &unknownAuthority) || errors.As(err, &invalidCert) || errors.As(err, &hostname) {
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
