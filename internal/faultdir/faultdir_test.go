package faultdir

import (
	"strings"
	"testing"
)

func TestOf(t *testing.T) {
	if got := Of("/abs/results"); got != "/abs/results/fault" {
		t.Errorf("FaultDir = %q", got)
	}
}

func TestRecordFileName(t *testing.T) {
	tests := []struct {
		name           string
		run, test, leg string
		wantPrefix     string
	}{
		{name: "plain", run: "20261129T101500Z-4f2a", test: "TestStoreContract/reset", leg: "reset", wantPrefix: "20261129T101500Z-4f2a--TestStoreContract_reset--reset--"},
		{name: "path traversal is flattened", run: "../..", test: "../../etc/passwd", leg: "a/b", wantPrefix: "_._..--_._.._etc_passwd--a_b--"},
		{name: "empty parts", wantPrefix: "_--_--_--"},
		{name: "spaces and quotes", run: "r", test: "TestX/with space 'q'", leg: "burst", wantPrefix: "r--TestX_with_space__q_--burst--"},
		{name: "long test names are cut", run: "r", test: strings.Repeat("T", 500), leg: "l", wantPrefix: "r--" + strings.Repeat("T", maxNamePart) + "--l--"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := RecordName(tc.run, tc.test, tc.leg)
			b := RecordName(tc.run, tc.test, tc.leg)
			if a == b {
				t.Errorf("two names for the same record are equal: %q", a)
			}
			if !strings.HasPrefix(a, tc.wantPrefix) {
				t.Errorf("name %q, want prefix %q", a, tc.wantPrefix)
			}
			if strings.ContainsRune(a, '/') || strings.HasPrefix(a, ".") || len(a) > 255 {
				t.Errorf("name %q is not a safe plain file name", a)
			}
			if Classify(a) != KindRecord {
				t.Errorf("name %q is not classified as a record", a)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		name string
		want Kind
	}{
		{"20261129T101500Z-4f2a--TestX--reset--0123456789ab.json", KindRecord},
		{"truncated.json", KindRecord},
		{".hidden.json", KindRecord},
		{"fault-report.json", KindReport},
		{".gate-stamp", KindStamp},
		{".record-123456.tmp", KindRecordTemp},
		{".gate-stamp-99.tmp", KindOtherTemp},
		{".fault-report-99.tmp", KindOtherTemp},
		{"README.txt", KindOther},
		{"x.json.bak", KindOther},
		{"other.tmp", KindOther},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Classify(tc.name); got != tc.want {
				t.Errorf("Classify(%q) = %d, want %d", tc.name, got, tc.want)
			}
		})
	}
}

func TestSafeName(t *testing.T) {
	for in, want := range map[string]string{
		"TestStoreContract/reset": "TestStoreContract_reset",
		"":                        "_",
		".hidden":                 "_hidden",
		"a.b c/d":                 "a.b_c_d",
		"ünïcode":                 "__n__code",
	} {
		if got := SafeName(in); got != want {
			t.Errorf("SafeName(%q) = %q, want %q", in, got, want)
		}
	}
}
