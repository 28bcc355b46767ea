package openstack

import (
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		value  string
		want   time.Duration
		wantOK bool
	}{
		{"", 0, false},
		{"0", 0, true},
		{" 5 ", 5 * time.Second, true},
		{"3600", time.Hour, true},
		{"Sun, 29 Nov 2026 10:00:07 GMT", 7 * time.Second, true},
		{"Sun, 29 Nov 2026 09:59:00 GMT", 0, true}, // past
		{"-1", 0, false},
		{"1.5", 0, false},
		{"soon", 0, false},
	} {
		got, ok := retryAfter(tc.value, now)
		if got != tc.want || ok != tc.wantOK {
			t.Errorf("retryAfter(%q) = %v, %v; want %v, %v", tc.value, got, ok, tc.want, tc.wantOK)
		}
	}
}
