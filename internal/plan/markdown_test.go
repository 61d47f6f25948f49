package plan

import (
	"strings"
	"testing"
)

// TestPlanMarkdownKeepsUntrustedTextAsText: registry strings and file
// names reach plan.md as text: no HTML, no link, no image, no table cell
// of their own, no line of their own.
func TestPlanMarkdownKeepsUntrustedTextAsText(t *testing.T) {
	hostile := strings.NewReplacer(
		`owner = "bank-team"`, `owner = "<img src=x onerror=alert(1)>"`,
		"a deposit is applied once, however often it is retried", `a deposit | is [applied](javascript:alert(1)) once\n# heading <script>x</script>`,
	).Replace(depositRegistry)
	var b strings.Builder
	p := Build(input(t, hostile, "deposit/deposit.go", "deposit/a|b<script>.go", "docs/\x1b[31mred.md"))
	if err := WriteMarkdown(&b, p); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	prose := outsideCode(md)
	for _, bad := range []string{"<script>", "](javascript:", "<img", "\n# heading", "\x1b"} {
		if strings.Contains(prose, bad) {
			t.Errorf("plan.md holds %q raw outside code", bad)
		}
	}
	if strings.Contains(md, "\x1b") {
		t.Errorf("plan.md holds a terminal escape, even in code")
	}
	for _, line := range strings.Split(md, "\n") {
		if strings.Contains(line, "a deposit") && strings.HasPrefix(line, "| bank.deposit/C1 |") {
			if cells := strings.Count(line, " | "); cells != 5 {
				t.Errorf("the claim's row has %d cell breaks, want 5: %s", cells, line)
			}
		}
	}
	for _, want := range []string{"## 1. Blast radius", "## 4. Coverage matrix", "**no fault variant**", "## 7. Scenarios", "AUTO-GENERATED", "## 10. Residual uncertainty"} {
		if !strings.Contains(md, want) {
			t.Errorf("plan.md lacks %q", want)
		}
	}
}

// TestAPlanWithNothingToDoSaysSoAndStops: a docs-only change's plan.md is
// its blast radius and why no plan is needed.
func TestAPlanWithNothingToDoSaysSoAndStops(t *testing.T) {
	var b strings.Builder
	if err := WriteMarkdown(&b, Build(input(t, depositRegistry, "README.md"))); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	if !strings.Contains(md, "**No plan needed.**") || !strings.Contains(md, "docs only") || strings.Contains(md, "## 2. Claims at risk") {
		t.Errorf("plan.md of a docs-only change:\n%s", md)
	}
}

// outsideCode is md without its fenced blocks and code spans, where text
// is shown as it is and acts as nothing.
func outsideCode(md string) string {
	var b strings.Builder
	fenced := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		parts := strings.Split(line, "`")
		for i := 0; i < len(parts); i += 2 {
			b.WriteString(parts[i])
		}
		b.WriteString("\n")
	}
	return b.String()
}
