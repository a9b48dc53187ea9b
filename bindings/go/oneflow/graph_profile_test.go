package oneflow_test

import (
	"strings"
	"testing"

	of "github.com/oneflow-c/oneflow-go/oneflow"
)

// GraphOptions.Profile: the dump shows each step's time and each op's share.
func TestProfiledGraphDumpShowsStepTimes(t *testing.T) {
	s := newSession(t)
	if of.NewGraphOptions().Profile {
		t.Fatal("profile is on by default")
	}
	for _, profile := range []bool{true, false} {
		opts := of.NewGraphOptions()
		opts.Fuse = false
		opts.Profile = profile
		g, err := s.NewGraph("profiled", opts)
		must(t, err)
		defer g.Close()
		must(t, g.Build(func(b *of.Builder) error {
			x, err := b.Input("x", of.Float32, []int64{of.DimUnknown, 8})
			if err != nil {
				return err
			}
			T := keeper(t)
			return b.AddOutput(T(T(x.Matmul(T(x.Transpose(0, 1)))).Exp()))
		}))
		x := keeper(t)(s.Full(of.Float32, []int64{4, 8}, 0.1, nil))
		for i := 0; i < 2; i++ {
			out, err := g.Run(x)
			must(t, err)
			for _, o := range out {
				o.Close()
			}
		}
		dump, err := g.Dump()
		must(t, err)
		if strings.Contains(dump, "profile: 2 runs") != profile || strings.Contains(dump, "    matmul: 1 step, ") != profile {
			t.Fatalf("profile %v, dump:\n%s", profile, dump)
		}
	}
}
