package atomicfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteMasksSecrets: an artifact (an issue body, a JSON result) that
// quotes a keyword-form DSN or a URL with a password reaches the disk
// masked.
func TestWriteMasksSecrets(t *testing.T) {
	const pw = "atomic-Secret-9"
	dir := t.TempDir()
	md := filepath.Join(dir, "ladder", "TestX.md")
	if err := Write(md, []byte("connect: host=h user=u password="+pw+" dbname=d\nand postgres://u:"+pw+"@h/db\n")); err != nil {
		t.Fatal(err)
	}
	js := filepath.Join(dir, "contested", "s.json")
	if err := WriteJSON(js, map[string]string{"reason": "cannot parse `host=h password='" + pw + "'`"}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{md, js} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), pw) {
			t.Errorf("%s holds the password:\n%s", p, b)
		}
	}
}
