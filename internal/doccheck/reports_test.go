package doccheck

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/contested/contested/internal/gate/report"
)

// TestTheArtifactsPageNamesEveryReportFormat: each report format validate
// writes (report.Formats) is on the artifacts page by its path, so a new
// format is not a file a user finds only by listing the directory.
func TestTheArtifactsPageNamesEveryReportFormat(t *testing.T) {
	const rel = "docs/reference/artifacts.md"
	page := readPage(t, rel)
	for _, f := range report.Formats {
		if p := filepath.ToSlash(f.Path()); !strings.Contains(page, "`"+p+"`") {
			t.Errorf("%s does not name the %T report, `%s`", rel, f, p)
		}
	}
}
