package registry

import "testing"

// TestTheBatteryTable: [battery] packages_per_core, read, and refused with
// its line and column.
func TestTheBatteryTable(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want int      // PackagesPerCore
		p2   int      // P(2)
		bad  *problem // the error, when the table is refused
	}{
		{"no table", "", 0, 0, nil},
		{"two per core", "[battery]\npackages_per_core = 2\n", 2, 4, nil},
		{"one per core: go test's own", "[battery]\npackages_per_core = 1\n", 1, 0, nil},
		{"zero", "[battery]\npackages_per_core = 0\n", 0, 0, &problem{"2:21", "[battery] packages_per_core must be a whole number from 1 to 8 (how many packages go test runs at once, per core), not 0"}},
		{"too many", "[battery]\npackages_per_core = 9\n", 0, 0, &problem{"2:21", "not 9"}},
		{"a string", "[battery]\npackages_per_core = \"2\"\n", 0, 0, &problem{"2:21", "not a string"}},
		{"a fraction", "[battery]\npackages_per_core = 1.5\n", 0, 0, &problem{"2:21", "not a float"}},
		{"an unknown key", "[battery]\nparallel = 4\n", 0, 0, &problem{"2:1", `unknown key "parallel" in [battery] (known keys: noise, packages_per_core)`}},
		{"a neighbour", "[battery]\nnoise = \"cpu:2,io:1\"\n", 0, 0, nil},
		{"a neighbour that does not parse", "[battery]\nnoise = \"gpu:2\"\n", 0, 0, &problem{"2:9", `[battery] noise: "gpu:2": "gpu" is not cpu or io; write cpu, cpu:N, io:N or cpu:N,io:M`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := parseTable(t, tt.doc, tt.bad)
			if reg == nil {
				return
			}
			if tt.name == "a neighbour" && (reg.Battery.Noise.CPU != 2 || reg.Battery.Noise.IO != 1) {
				t.Errorf("noise %+v, want cpu:2,io:1", reg.Battery.Noise)
			}
			if reg.Battery.PackagesPerCore != tt.want || reg.Battery.P(2) != tt.p2 {
				t.Errorf("packages_per_core %d, P(2) = %d; want %d and %d", reg.Battery.PackagesPerCore, reg.Battery.P(2), tt.want, tt.p2)
			}
		})
	}
}
