package targets

import (
	"os"
	"slices"
	"strings"

	"github.com/contested/contested/internal/command"
)

// init runs before Mage's generated main, which is the only place a
// magefile can act before Mage parses the command line. It does two
// things, both here so there is one place to read them:
//
//   - a worker process (see workers) runs its target and exits, so the
//     supervisor's child never reaches Mage's parser;
//   - in Mage's own process, foldArgs gives Mage the one spelling it
//     parses (-name=value, one value per option) for the documented forms
//     it would refuse. The contract documents "program-gate -merge DIR...";
//     the targets' help documents "validate -shard I/N", "history TEST",
//     "arbitrate -rerun TEST", "mutants ./pkg...", "validate -plan FILE"
//     and "plan -since REV". Mage's generated parser cannot be extended,
//     so the alternative is changing what the contract promises.
func init() {
	command.Serve()
	os.Args = foldArgs(os.Args)
}

// foldArgs rewrites Mage's command line so that each documented form
// reaches its target as Mage parses it. It changes nothing else:
//
//	mutants ./a ./b/...       mutants -packages=./a,./b/...
//	program-gate -merge a b   program-gate -merge=a\nb
//	validate -shard 2/3       validate -shard=2/3
//	validate -plan F          validate -plan=F
//	plan -since main          plan -since=main
//	history TestC             history -test=TestC
//	arbitrate -rerun TestX    arbitrate TestX -rerun
func foldArgs(argv []string) []string {
	return foldShardArgs(foldPatterns(argv))
}

// foldShardArgs rewrites Mage's command line so that the documented forms
// reach the targets: "program-gate -merge a b c" becomes "program-gate
// -merge=a\nb\nc" (Mage takes one value per option), and "validate -shard
// 2/3" becomes "validate -shard=2/3". The directories after -merge are the
// arguments up to the next one that starts with "-".
func foldShardArgs(argv []string) []string {
	out := make([]string, 0, len(argv))
	for i := 0; i < len(argv); i++ {
		a := argv[i]
		out = append(out, a)
		if i == 0 || i+1 >= len(argv) {
			continue
		}
		switch {
		case strings.EqualFold(a, "program-gate") || strings.EqualFold(a, "programgate"):
			if next := argv[i+1]; next == "-merge" || next == "--merge" {
				j := i + 2
				for j < len(argv) && !strings.HasPrefix(argv[j], "-") {
					j++
				}
				out = append(out, "-merge="+strings.Join(argv[i+2:j], mergeSep))
				i = j - 1
			}
		case strings.EqualFold(a, "history"):
			if next := argv[i+1]; !strings.HasPrefix(next, "-") {
				out = append(out, "-test="+next)
				i++
			}
		case strings.EqualFold(a, "arbitrate"):
			// Mage reads a target's flags after its arguments: "arbitrate
			// -rerun TestX" is "arbitrate TestX -rerun".
			if next := argv[i+1]; (next == "-rerun" || next == "--rerun") && i+2 < len(argv) {
				out = append(out, argv[i+2], "-rerun")
				i += 2
			}
		case strings.EqualFold(a, "validate"):
			out, i = foldValues(out, argv, i, "shard", "plan")
		case strings.EqualFold(a, "plan"):
			out, i = foldValues(out, argv, i, "since")
		}
	}
	return out
}

// foldValues folds the flags after the target at argv[i] that take a
// value (names) and are given it as the next argument ("-plan F") into
// the one spelling Mage parses ("-plan=F"), leaving the target's other
// flags as they are. It returns out with them and the index of the last
// argument it read.
func foldValues(out, argv []string, i int, names ...string) ([]string, int) {
	for i+1 < len(argv) && strings.HasPrefix(argv[i+1], "-") {
		name := strings.TrimLeft(argv[i+1], "-")
		if slices.Contains(names, name) && i+2 < len(argv) {
			out = append(out, "-"+name+"="+argv[i+2])
			i += 2
			continue
		}
		out = append(out, argv[i+1])
		i++
	}
	return out, i
}

// foldPatterns rewrites "mutants ./a ./b/..." on Mage's command line into
// "mutants -packages=./a,./b/...": Mage takes no variable argument list,
// and would run ./a as a target. A package pattern is an argument after
// mutants that starts with "." or holds a "/", which no target name does.
func foldPatterns(argv []string) []string {
	for i := 1; i < len(argv); i++ {
		if !strings.EqualFold(argv[i], "mutants") {
			continue
		}
		j := i + 1
		for j < len(argv) && isPattern(argv[j]) {
			j++
		}
		if j == i+1 {
			return argv
		}
		out := append(append([]string(nil), argv[:i+1]...), "-packages="+strings.Join(argv[i+1:j], ","))
		return append(out, argv[j:]...)
	}
	return argv
}

func isPattern(arg string) bool {
	return arg != "" && !strings.HasPrefix(arg, "-") && (strings.HasPrefix(arg, ".") || strings.Contains(arg, "/"))
}
