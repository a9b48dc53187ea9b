package oneflow_test

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// coverageExclusions are the header's functions the package does not call, each with its reason.
// Empty today: every of_* function is reachable from the idiomatic layer (the status functions and
// the options initialisers are used internally, the op functions by the generated methods).
var coverageExclusions = map[string]string{}

// TestCoverage fails when a function of oneflow_c.h is not referenced (as C.of_...) by the package's
// non-test sources, ops_gen.go included. The header is $OF_HEADER, or found from this directory.
func TestCoverage(t *testing.T) {
	header := os.Getenv("OF_HEADER")
	if header == "" {
		header = filepath.Join("..", "..", "..", "capi", "include", "oneflow", "oneflow_c.h")
	}
	text, err := os.ReadFile(header)
	if err != nil {
		t.Fatalf("the header: %v (set OF_HEADER)", err)
	}
	decl := regexp.MustCompile(`(?m)^OF_API\s[^;(]*?\b(of_[a-z0-9_]+)\s*\(`)
	var functions []string
	for _, m := range decl.FindAllSubmatch(text, -1) {
		functions = append(functions, string(m[1]))
	}
	if len(functions) < 150 {
		t.Fatalf("only %d functions read from %s", len(functions), header)
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var src strings.Builder
	sawGenerated := false
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		sawGenerated = sawGenerated || f == "ops_gen.go"
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src.Write(b)
	}
	if !sawGenerated {
		t.Fatal("ops_gen.go is missing: run go generate (or the CMake build)")
	}
	used := map[string]bool{}
	for _, m := range regexp.MustCompile(`\bC\.(of_[a-z0-9_]+)\b`).FindAllStringSubmatch(src.String(), -1) {
		used[m[1]] = true
	}
	var missing []string
	for _, f := range functions {
		if !used[f] && coverageExclusions[f] == "" {
			missing = append(missing, f)
		}
	}
	for f := range coverageExclusions {
		if used[f] {
			t.Errorf("%s is excluded but used: drop the exclusion", f)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Fatalf("%d of the header's %d functions are not used by the package: %s", len(missing), len(functions),
			strings.Join(missing, ", "))
	}
	t.Logf("all %d functions of %s are used (%d excluded)", len(functions), filepath.Base(header), len(coverageExclusions))
}
