package report

import (
	"github.com/contested/contested/internal/atomicfile"
)

// DegradedStage is the last degraded-UX stage's cells (go tool mage
// degraded), as its cells.json under the results directory holds them,
// for the report's section with the screenshots.
type DegradedStage struct {
	RunID    string         `json:"run_id"`
	Front    string         `json:"front"`
	Bound    string         `json:"bound"`
	Duration string         `json:"duration"`
	Cells    []DegradedCell `json:"cells"`
}

// DegradedCell is one cell of the stage.
type DegradedCell struct {
	Cell     string   `json:"cell"`
	Leg      string   `json:"leg"`
	Passed   bool     `json:"passed"`
	Fired    bool     `json:"fired"`
	Problems []string `json:"problems"`
	Victim   string   `json:"victim"`
	Database string   `json:"database"`
	// Screenshot is relative to the results directory.
	Screenshot string `json:"screenshot"`
}

// Link is the cell's screenshot as the report (in the fault directory)
// links it; "" when the stage kept none.
func (c DegradedCell) Link() string {
	if c.Screenshot == "" {
		return ""
	}
	return "../" + c.Screenshot
}

// degradedCells is the stage's summary file under the results directory.
const degradedCells = "degraded/cells.json"

// Degraded reads the last degraded stage's cells under root, nil when
// there are none (no stage ran, or its file does not read). Never through a
// symbolic link.
func Degraded(root string) *DegradedStage {
	r, err := atomicfile.OpenRoot(root)
	if err != nil {
		return nil
	}
	var st DegradedStage
	if err := r.ReadJSON(degradedCells, &st, 4<<20); err != nil || len(st.Cells) == 0 {
		return nil
	}
	return &st
}

// Failed counts the failing cells.
func (s *DegradedStage) Failed() int {
	n := 0
	for _, c := range s.Cells {
		if !c.Passed {
			n++
		}
	}
	return n
}
