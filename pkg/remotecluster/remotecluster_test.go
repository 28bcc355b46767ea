package remotecluster

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/limbo-dev/limbo/pkg/responselimit"
)

// secretReader serves Secrets from a map, as the local cluster would.
type secretReader struct {
	secrets map[types.NamespacedName]*corev1.Secret
	err     error // returned for every Get when set
}

func (r *secretReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	if r.err != nil {
		return r.err
	}
	s, ok := r.secrets[key]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, key.Name)
	}
	s.DeepCopyInto(obj.(*corev1.Secret))
	return nil
}

func (r *secretReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("not supported")
}

func readerOf(secrets ...*corev1.Secret) *secretReader {
	r := &secretReader{secrets: map[types.NamespacedName]*corev1.Secret{}}
	for _, s := range secrets {
		r.secrets[client.ObjectKeyFromObject(s)] = s
	}
	return r
}

func secretWith(name, uid, resourceVersion string, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name, UID: types.UID(uid), ResourceVersion: resourceVersion},
		Data:       data,
	}
}

const testToken = "remote-token"

// fakeAPIServer speaks enough of the Kubernetes API (discovery of v1 and one
// ConfigMap, Status errors otherwise) over TLS to check what the clients send.
// hang makes every request wait until the client gives up.
func fakeAPIServer(t *testing.T, hang bool) *httptest.Server {
	t.Helper()
	write := func(w http.ResponseWriter, code int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(v)
	}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hang {
			<-r.Context().Done()
			return
		}
		if r.Header.Get("Authorization") != "Bearer "+testToken {
			write(w, http.StatusUnauthorized, metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Reason: metav1.StatusReasonUnauthorized, Code: http.StatusUnauthorized})
			return
		}
		switch r.URL.Path {
		case "/api":
			write(w, http.StatusOK, metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}})
		case "/apis":
			write(w, http.StatusOK, metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}})
		case "/api/v1":
			write(w, http.StatusOK, metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: "v1", APIResources: []metav1.APIResource{
				{Name: "configmaps", SingularName: "configmap", Namespaced: true, Kind: "ConfigMap", Verbs: metav1.Verbs{"get", "list", "create", "delete"}},
			}})
		case "/api/v1/namespaces/default/configmaps/huge":
			// A ConfigMap longer than any answer limbo reads: a server of the
			// Bundle author's own can answer so.
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"namespace":"default","name":"huge"},"data":{"x":"`)
			chunk := strings.Repeat("x", 1<<20)
			for range hugeMiB {
				n, err := io.WriteString(w, chunk)
				hugeServed.Add(int64(n))
				if err != nil {
					return
				}
			}
			_, _ = io.WriteString(w, `"}}`)
		case "/api/v1/namespaces/default/configmaps/greeting":
			write(w, http.StatusOK, corev1.ConfigMap{TypeMeta: metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "greeting"}, Data: map[string]string{"hello": "remote"}})
		default:
			write(w, http.StatusNotFound, metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Reason: metav1.StatusReasonNotFound, Code: http.StatusNotFound, Message: r.URL.Path + " not found"})
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// hugeMiB is the size of the fake server's huge ConfigMap, in MiB, and
// hugeServed counts the bytes of it written to clients.
var (
	hugeMiB    = 3 * responselimit.MaxBody >> 20
	hugeServed atomic.Int64
)

// kubeconfigFor is an admin kubeconfig of srv with its CA embedded.
func kubeconfigFor(t *testing.T, srv *httptest.Server) []byte {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["remote"] = &clientcmdapi.Cluster{Server: srv.URL, CertificateAuthorityData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: testToken}
	cfg.Contexts["remote"] = &clientcmdapi.Context{Cluster: "remote", AuthInfo: "admin"}
	cfg.CurrentContext = "remote"
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// Every way a kubeconfig Secret can be unusable is an *Error with its reason and a
// message naming the Secret; none of them counts as an unreachable cluster.
func TestClientsSecretErrors(t *testing.T) {
	noServer := []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
users: [{name: u, user: {token: t}}]
current-context: c
`)
	noCluster := []byte("apiVersion: v1\nkind: Config\n")
	// The controller's own ServiceAccount token, and a command on its machine.
	tokenFile := []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://kubernetes.default.svc", certificate-authority: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
users: [{name: u, user: {tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token}}]
current-context: c
`)
	execCommand := []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://remote.example"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh, args: ["-c", "cat /etc/shadow"]}}}]
current-context: c
`)
	caFileAmongClusters := []byte(`apiVersion: v1
kind: Config
clusters:
- {name: a, cluster: {server: "https://a.example", certificate-authority: /etc/ssl/ca.crt}}
- {name: b, cluster: {server: "https://b.example"}}
- {name: c, cluster: {server: "https://c.example"}}
- {name: d, cluster: {server: "https://d.example"}}
- {name: e, cluster: {server: "https://e.example"}}
- {name: f, cluster: {server: "https://f.example"}}
- {name: g, cluster: {server: "https://g.example"}}
- {name: h, cluster: {server: "https://h.example"}}
contexts: [{name: b, context: {cluster: b, user: u}}]
users: [{name: u, user: {token: t}}]
current-context: b
`)
	for _, tc := range []struct {
		name    string
		reader  *secretReader
		ref     SecretRef
		reason  Reason
		message string
	}{
		{"empty name", readerOf(), SecretRef{}, ReasonInvalidReference, `kubeConfigSecretRef.name is empty`},
		{"secret missing", readerOf(), SecretRef{Name: "kc"}, ReasonSecretNotFound, `kubeconfig Secret "kc" not found in namespace "team"`},
		{"secret unreadable", &secretReader{err: apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "kc", errors.New("no"))}, SecretRef{Name: "kc"}, ReasonSecretUnreadable, `kubeconfig Secret "kc" (key "value"): SecretUnreadable: `},
		{"default key missing", readerOf(secretWith("kc", "u1", "1", map[string][]byte{"other": []byte("x")})), SecretRef{Name: "kc"}, ReasonKeyMissing, `kubeconfig Secret "kc" has no key "value" (or it is empty)`},
		{"named key missing", readerOf(secretWith("kc", "u1", "1", map[string][]byte{"value": []byte("x")})), SecretRef{Name: "kc", Key: "kubeconfig"}, ReasonKeyMissing, `kubeconfig Secret "kc" has no key "kubeconfig"`},
		{"key empty", readerOf(secretWith("kc", "u1", "1", map[string][]byte{"value": nil})), SecretRef{Name: "kc"}, ReasonKeyMissing, `has no key "value"`},
		{"not a kubeconfig", readerOf(secretWith("kc", "u1", "1", map[string][]byte{"value": []byte("{not yaml: [")})), SecretRef{Name: "kc"}, ReasonInvalidKubeconfig, `kubeconfig Secret "kc" (key "value"): InvalidKubeconfig: not a kubeconfig`},
		{"no cluster", readerOf(secretWith("kc", "u1", "1", map[string][]byte{"value": noCluster})), SecretRef{Name: "kc"}, ReasonInvalidKubeconfig, `the kubeconfig has no cluster`},
		{"no server", readerOf(secretWith("kc", "u1", "1", map[string][]byte{"value": noServer})), SecretRef{Name: "kc"}, ReasonInvalidKubeconfig, `InvalidKubeconfig`},
		{"credentials from the controller's files", readerOf(secretWith("kc", "u1", "1", map[string][]byte{"value": tokenFile})), SecretRef{Name: "kc"}, ReasonInvalidKubeconfig,
			`the kubeconfig uses tokenFile, certificate-authority: credentials must be embedded`},
		// Any cluster of the kubeconfig, not only the last one looked at.
		{"a file of one cluster among several", readerOf(secretWith("kc", "u1", "1", map[string][]byte{"value": caFileAmongClusters})), SecretRef{Name: "kc"}, ReasonInvalidKubeconfig,
			`the kubeconfig uses certificate-authority: credentials must be embedded`},
		{"credentials from a command", readerOf(secretWith("kc", "u1", "1", map[string][]byte{"value": execCommand})), SecretRef{Name: "kc"}, ReasonInvalidKubeconfig,
			`the kubeconfig uses exec: credentials must be embedded`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clients, err := NewCache(Options{}).Clients(context.Background(), tc.reader, "team", tc.ref)
			var secretErr *Error
			if !errors.As(err, &secretErr) {
				t.Fatalf("got clients %v, error %v; want an *Error", clients, err)
			}
			if secretErr.Reason != tc.reason || !strings.Contains(err.Error(), tc.message) {
				t.Errorf("reason %s, message %q; want %s containing %q", secretErr.Reason, err, tc.reason, tc.message)
			}
			if secretErr.Secret != (types.NamespacedName{Namespace: "team", Name: tc.ref.Name}) {
				t.Errorf("error names Secret %v", secretErr.Secret)
			}
			if IsUnreachable(err) {
				t.Error("a Secret problem counts as an unreachable cluster")
			}
		})
	}
}

// The clients reach the kubeconfig's server, trusting its embedded CA and sending
// its credentials, through the key the reference names.
func TestClientsTalkToTheCluster(t *testing.T) {
	srv := fakeAPIServer(t, false)
	reader := readerOf(secretWith("kc", "u1", "1", map[string][]byte{"kubeconfig": kubeconfigFor(t, srv)}))
	clients, err := NewCache(Options{}).Clients(context.Background(), reader, "team", SecretRef{Name: "kc", Key: "kubeconfig"})
	if err != nil {
		t.Fatal(err)
	}
	if clients.Host != srv.URL {
		t.Errorf("Host %q, want %q", clients.Host, srv.URL)
	}
	var cm corev1.ConfigMap
	if err := clients.Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "greeting"}, &cm); err != nil {
		t.Fatal(err)
	}
	if cm.Data["hello"] != "remote" {
		t.Errorf("read %v", cm.Data)
	}
	err = clients.Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "absent"}, &cm)
	if !apierrors.IsNotFound(err) || IsUnreachable(err) {
		t.Errorf("absent object: %v; want NotFound, not unreachable", err)
	}
	if _, err := clients.RESTMapper.RESTMapping(schema.GroupKind{Kind: "ConfigMap"}, "v1"); err != nil {
		t.Errorf("RESTMapping of ConfigMap: %v", err)
	}
	if _, err := clients.Discovery.ServerResourcesForGroupVersion("v1"); err != nil {
		t.Errorf("discovery: %v", err)
	}
}

// An answer longer than responselimit.MaxBody fails its request instead of being
// read whole (a server that answered without end filled limbo's memory), and the
// request's error says so.
func TestClientsBoundAnswers(t *testing.T) {
	srv := fakeAPIServer(t, false)
	reader := readerOf(secretWith("kc", "u1", "1", map[string][]byte{"kubeconfig": kubeconfigFor(t, srv)}))
	clients, err := NewCache(Options{}).Clients(context.Background(), reader, "team", SecretRef{Name: "kc", Key: "kubeconfig"})
	if err != nil {
		t.Fatal(err)
	}
	var cm corev1.ConfigMap
	err = clients.Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "huge"}, &cm)
	if !errors.Is(err, responselimit.ErrTooLarge) || IsUnreachable(err) {
		t.Errorf("a %d MiB answer: %.300v; want ErrTooLarge, not unreachable", hugeMiB, err)
	}
	t.Logf("the error: %.400v", err)
	// The server writes ahead into the connection's buffers; far less than all.
	if served, limit := hugeServed.Load(), int64(responselimit.MaxBody+32<<20); served > limit {
		t.Errorf("%d MiB of the huge answer were written, want at most %d MiB", served>>20, limit>>20)
	}
}

// Clients are built once per Secret version: the same UID, resourceVersion and key
// reuse them; a new resourceVersion (a rotated kubeconfig), a recreated Secret (new
// UID) or another key build new ones. A Secret found gone drops its clients.
func TestClientsCachedPerSecretVersion(t *testing.T) {
	kubeconfig := kubeconfigFor(t, fakeAPIServer(t, false))
	data := map[string][]byte{"value": kubeconfig, "other": kubeconfig}
	cache := NewCache(Options{})
	get := func(s *corev1.Secret, key string) *Clients {
		t.Helper()
		c, err := cache.Clients(context.Background(), readerOf(s), "team", SecretRef{Name: s.Name, Key: key})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	first := get(secretWith("kc", "u1", "1", data), "")
	if again := get(secretWith("kc", "u1", "1", data), "value"); again != first {
		t.Error("the same Secret version built new clients")
	}
	// Each change is made to the version cached: one thing differs at a time.
	for _, tc := range []struct {
		name   string
		secret *corev1.Secret
		key    string
	}{
		{"new resourceVersion", secretWith("kc", "u1", "2", data), ""},
		{"new UID", secretWith("kc", "u2", "1", data), ""},
		{"other key", secretWith("kc", "u1", "1", data), "other"},
	} {
		cached := get(secretWith("kc", "u1", "1", data), "")
		if get(tc.secret, tc.key) == cached {
			t.Errorf("%s: clients reused", tc.name)
		}
	}
	first = get(secretWith("kc", "u1", "1", data), "")
	if _, err := cache.Clients(context.Background(), readerOf(), "team", SecretRef{Name: "kc"}); err == nil {
		t.Fatal("a missing Secret gave clients")
	}
	if n := cache.entries.Len(); n != 0 {
		t.Errorf("the Cache holds %d entries after the Secret was found gone, want 0", n)
	}
	if get(secretWith("kc", "u1", "1", data), "") == first {
		t.Error("clients reused after the Secret was found gone")
	}
	// A version whose kubeconfig is broken drops the clients of the one before:
	// never used again, they kept its credentials and connections.
	if _, err := cache.Clients(context.Background(), readerOf(secretWith("kc", "u1", "3", map[string][]byte{"value": []byte("not: [a kubeconfig")})), "team", SecretRef{Name: "kc"}); err == nil {
		t.Fatal("a broken kubeconfig gave clients")
	}
	if n := cache.entries.Len(); n != 0 {
		t.Errorf("the Cache holds %d entries after the Secret's kubeconfig broke, want 0", n)
	}
	// Clusters used in turn each keep their clients (the Cache holds many).
	other := secretWith("kc2", "u9", "1", data)
	one, two := get(secretWith("kc", "u1", "1", data), ""), get(other, "")
	if get(secretWith("kc", "u1", "1", data), "") != one || get(other, "") != two {
		t.Error("two Secrets used in turn built new clients")
	}
}

// A server URL that carries credentials (user:password@, basic auth, which
// Kubernetes has not accepted since 1.19) is refused, and the error shows no
// part of the password: client-go builds every request URL from it and logs it
// whole ("Waited before sending request"), and quotes it escaped in its errors,
// which the raw text's redaction did not find.
func TestServerURLWithCredentialsRefused(t *testing.T) {
	srv := fakeAPIServer(t, false)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	for _, server := range []string{
		"https://admin:S3CRET@" + u.Host,
		"admin:S3CRET@" + u.Host,
		"https://admin:S3\"CRET@" + u.Host,
		"https://admin:S3\\CRET@" + u.Host,
		"https://admin:S3\tCRET@" + u.Host + "/prefix",
		"https://admin@" + u.Host,
	} {
		cfg, err := clientcmd.Load(kubeconfigFor(t, srv))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Clusters["remote"].Server = server
		kubeconfig, err := clientcmd.Write(*cfg)
		if err != nil {
			t.Fatal(err)
		}
		_, err = NewCache(Options{}).Clients(context.Background(), readerOf(secretWith("kc", "u1", "1", map[string][]byte{"value": kubeconfig})), "team", SecretRef{Name: "kc"})
		var kcErr *Error
		if !errors.As(err, &kcErr) || kcErr.Reason != ReasonInvalidKubeconfig {
			t.Fatalf("server %q: Clients = %v, want an InvalidKubeconfig error", server, err)
		}
		if strings.Contains(err.Error(), "S3") || strings.Contains(err.Error(), "admin") {
			t.Errorf("server %q: error %q shows the credentials", server, err)
		}
	}
}

// A server that does not answer makes a call fail after the timeout, as unreachable.
func TestClientsRequestTimeout(t *testing.T) {
	reader := readerOf(secretWith("kc", "u1", "1", map[string][]byte{"value": kubeconfigFor(t, fakeAPIServer(t, true))}))
	clients, err := NewCache(Options{Timeout: 200 * time.Millisecond}).Clients(context.Background(), reader, "team", SecretRef{Name: "kc"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = clients.Discovery.ServerResourcesForGroupVersion("v1")
	if err == nil || !IsUnreachable(err) || ctx.Err() != nil {
		t.Errorf("hanging server: %v; want an unreachable error from the request timeout", err)
	}
}

// A server that is gone (connection refused) is unreachable, and so is one whose
// requests time out; a server that answers an error is not, nor is one whose
// certificate the kubeconfig's CA does not vouch for.
func TestClientsUnreachableServer(t *testing.T) {
	gone := fakeAPIServer(t, false)
	goneKubeconfig := kubeconfigFor(t, gone)
	gone.Close()
	// Without the embedded CA, the system's roots do not trust httptest's certificate.
	untrusted, err := clientcmd.Load(kubeconfigFor(t, fakeAPIServer(t, false)))
	if err != nil {
		t.Fatal(err)
	}
	untrusted.Clusters["remote"].CertificateAuthorityData = nil
	wrongCA, err := clientcmd.Write(*untrusted)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name        string
		kubeconfig  []byte
		unreachable bool
	}{
		{"connection refused", goneKubeconfig, true},
		{"certificate of another CA", wrongCA, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reader := readerOf(secretWith("kc", "u1", "1", map[string][]byte{"value": tc.kubeconfig}))
			clients, err := NewCache(Options{}).Clients(context.Background(), reader, "team", SecretRef{Name: "kc"})
			if err != nil {
				t.Fatal(err)
			}
			var cm corev1.ConfigMap
			err = clients.Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "greeting"}, &cm)
			if err == nil || IsUnreachable(err) != tc.unreachable {
				t.Errorf("error %v: unreachable %v, want %v", err, IsUnreachable(err), tc.unreachable)
			}
		})
	}
}

// LastAnswer is when the server last answered a request, whatever the answer (an
// error status included), except 502, 503 and 504, which say it is unavailable. A
// request that times out records nothing.
func TestClientsLastAnswer(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hang" {
			<-r.Context().Done()
			return
		}
		code, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/status/"))
		if err != nil {
			code = http.StatusBadRequest
		}
		w.WriteHeader(code)
	}))
	t.Cleanup(srv.Close)
	reader := readerOf(secretWith("kc", "u1", "1", map[string][]byte{"value": kubeconfigFor(t, srv)}))
	clients, err := NewCache(Options{Timeout: 200 * time.Millisecond}).Clients(context.Background(), reader, "team", SecretRef{Name: "kc"})
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) {
		t.Helper()
		_ = clients.Discovery.RESTClient().Get().AbsPath(path).Do(context.Background()).Error()
	}
	if got := clients.LastAnswer(); !got.IsZero() {
		t.Fatalf("LastAnswer before any request: %v, want zero", got)
	}
	for _, tc := range []struct {
		path     string
		answered bool
	}{
		{"/status/503", false},
		{"/status/200", true},
		{"/status/502", false},
		{"/status/404", true},
		{"/status/504", false},
		{"/status/500", true},
		{"/hang", false},
	} {
		before, begin := clients.LastAnswer(), time.Now()
		get(tc.path)
		got := clients.LastAnswer()
		switch {
		case tc.answered && (got.Before(begin) || got.After(time.Now())):
			t.Errorf("%s: LastAnswer %v, want the time of this answer (after %v)", tc.path, got, begin)
		case !tc.answered && !got.Equal(before):
			t.Errorf("%s: LastAnswer moved from %v to %v; want it unchanged", tc.path, before, got)
		}
	}
}

// The clients that the Cache lets go of (a rotated kubeconfig) have their idle
// connections closed, through client-go's wrappers of the transport.
func TestClientsIdleConnectionsClosed(t *testing.T) {
	t.Run("replaced by the Secret's next version", func(t *testing.T) {
		testIdleConnectionsClosed(t, func(cache *Cache, data map[string][]byte) error {
			_, err := cache.Clients(context.Background(), readerOf(secretWith("kc", "u1", "2", data)), "team", SecretRef{Name: "kc"})
			return err
		})
	})
	// The least recently used cluster's clients go when the Cache is full: their
	// connections must not stay open with nothing to use them.
	t.Run("evicted by other clusters", func(t *testing.T) {
		testIdleConnectionsClosed(t, func(cache *Cache, data map[string][]byte) error {
			for i := range MaxCachedClusters {
				name := "other-" + strconv.Itoa(i)
				if _, err := cache.Clients(context.Background(), readerOf(secretWith(name, "u-"+name, "1", data)), "team", SecretRef{Name: name}); err != nil {
					return err
				}
			}
			return nil
		})
	})
}

// testIdleConnectionsClosed makes a request with the clients of Secret kc,
// version 1, lets go of them with letGo, and checks that their idle connection
// is closed then, and not before.
func testIdleConnectionsClosed(t *testing.T, letGo func(*Cache, map[string][]byte) error) {
	closed := make(chan struct{}, 16)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateClosed {
			closed <- struct{}{}
		}
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	data := map[string][]byte{"value": kubeconfigFor(t, srv)}
	cache := NewCache(Options{})
	ctx := context.Background()
	old, err := cache.Clients(ctx, readerOf(secretWith("kc", "u1", "1", data)), "team", SecretRef{Name: "kc"})
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Discovery.RESTClient().Get().AbsPath("/version").Do(ctx).Error(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-closed:
		t.Fatal("the connection closed before the clients were let go of")
	default:
	}
	if err := letGo(cache, data); err != nil {
		t.Fatal(err)
	}
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Error("the idle connection of the replaced clients is still open")
	}
}

// A Cache without options uses the scheme of client-go and DefaultTimeout for
// every request (a zero or negative timeout would be none).
func TestNewCacheDefaults(t *testing.T) {
	kubeconfig := kubeconfigFor(t, fakeAPIServer(t, false))
	for _, timeout := range []time.Duration{0, -time.Second} {
		clients, err := NewCache(Options{Timeout: timeout}).Clients(context.Background(), readerOf(secretWith("kc", "u1", "1", map[string][]byte{"value": kubeconfig})), "team", SecretRef{Name: "kc"})
		if err != nil {
			t.Fatal(err)
		}
		if clients.http.Timeout != DefaultTimeout {
			t.Errorf("Timeout %v: requests time out after %v, want %v", timeout, clients.http.Timeout, DefaultTimeout)
		}
	}
}

// A cluster's UID is read once: kube-system's UID does not change, and every
// pass asks for it.
func TestClientsClusterUIDReadOnce(t *testing.T) {
	gets := 0
	c := &Clients{Client: fake.NewClientBuilder().WithObjects(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system", UID: "uid-cluster"}}).
		WithInterceptorFuncs(interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			gets++
			return c.Get(ctx, key, obj, opts...)
		}}).Build()}
	for range 2 {
		if uid, err := c.ClusterUID(context.Background()); err != nil || uid != "uid-cluster" {
			t.Fatalf("ClusterUID = %q, %v", uid, err)
		}
	}
	if gets != 1 {
		t.Errorf("%d reads of kube-system, want 1", gets)
	}
}

// A kubeconfig refused for a server or proxy URL that does not parse leaves the
// password in it out of the error, which goes into Bundle status and events:
// client-go's errors quote such URLs whole.
func TestInvalidKubeconfigErrorWithoutPassword(t *testing.T) {
	srv := fakeAPIServer(t, false)
	for _, tc := range []struct {
		name   string
		change func(c *clientcmdapi.Cluster)
	}{
		{"a server URL that does not parse", func(c *clientcmdapi.Cluster) { c.Server = "https://admin:S3/CRET@host%zz:6443" }},
		{"a proxy URL of an unknown scheme", func(c *clientcmdapi.Cluster) { c.ProxyURL = "ftp://admin:S3CRET@proxy:1080" }},
		{"a proxy URL that does not parse", func(c *clientcmdapi.Cluster) { c.ProxyURL = "socks5h://admin:S3CRET@proxy%zz:1080" }},
		{"a proxy URL whose password has a quote", func(c *clientcmdapi.Cluster) { c.ProxyURL = "socks5://admin:S3\"CRET@proxy:1080" }},
		{"a proxy URL whose password has a tab", func(c *clientcmdapi.Cluster) { c.ProxyURL = "socks5://admin:S3\tCRET@proxy:1080" }},
		{"a server URL whose password has a backslash", func(c *clientcmdapi.Cluster) { c.Server = "https://admin:S3\\CRET@host:6443" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := clientcmd.Load(kubeconfigFor(t, srv))
			if err != nil {
				t.Fatal(err)
			}
			tc.change(cfg.Clusters["remote"])
			kubeconfig, err := clientcmd.Write(*cfg)
			if err != nil {
				t.Fatal(err)
			}
			_, err = NewCache(Options{}).Clients(context.Background(), readerOf(secretWith("kc", "u1", "1", map[string][]byte{"value": kubeconfig})), "team", SecretRef{Name: "kc"})
			var kcErr *Error
			if !errors.As(err, &kcErr) || kcErr.Reason != ReasonInvalidKubeconfig {
				t.Fatalf("Clients = %v, want an InvalidKubeconfig error", err)
			}
			if strings.Contains(err.Error(), "S3") {
				t.Errorf("error %q shows the password", err)
			}
		})
	}
}
