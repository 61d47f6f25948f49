package reap

import (
	"encoding/json"
	"os"
)

// WarmHeld reports whether the owner record at path (a warm layer's
// record, written by faultlayer) exists, parses and names run: the warm
// layer labelled with that path and run is still wanted. A missing,
// unreadable or newer record means the layer is stale, and a sweep may
// remove it once its creating process is gone.
func WarmHeld(path, run string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	var rec struct {
		RunID string `json:"run_id"`
	}
	return json.Unmarshal(b, &rec) == nil && rec.RunID != "" && rec.RunID == run
}
