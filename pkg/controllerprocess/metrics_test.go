package controllerprocess

import "testing"

func TestParseMetrics(t *testing.T) {
	text := `# HELP apiserver_request_total Counter of apiserver requests.
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",group="",resource="configmaps",scope="resource",subresource="",verb="GET",version="v1"} 12
apiserver_request_total{code="201",group="limbo.dev",resource="bundles",subresource="status",verb="PATCH"} 3
weird{msg="a \"quoted\", comma\\ and } brace"} 1.5e+00 1700000000000
go_memstats_heap_alloc_bytes 1.048576e+06
`
	s, err := ParseMetrics(text)
	if err != nil {
		t.Fatal(err)
	}
	if len(s) != 4 {
		t.Fatalf("got %d samples, want 4: %+v", len(s), s)
	}
	if got := s.Sum("apiserver_request_total", map[string]string{"verb": "GET"}); got != 12 {
		t.Errorf("GET = %v, want 12", got)
	}
	if got := s.By("apiserver_request_total", "verb", "resource"); got["PATCH/bundles"] != 3 || got["GET/configmaps"] != 12 {
		t.Errorf("By = %v", got)
	}
	if got := s[2].Labels["msg"]; got != `a "quoted", comma\ and } brace` {
		t.Errorf("label = %q", got)
	}
	if got := s.Sum("go_memstats_heap_alloc_bytes", nil); got != 1<<20 {
		t.Errorf("heap = %v", got)
	}
	if _, err := ParseMetrics(`x{a="b} 1`); err == nil {
		t.Error("unterminated label value: no error")
	}
}
