package oneflow_test

import (
	"math"
	"testing"

	of "github.com/oneflow-c/oneflow-go/oneflow"
)

// TestLossScaling: a finite step on the scaled loss equals the unscaled step (scale 2^10: exact), a
// step whose gradients hold an inf is skipped and halves the scale; the errors.
func TestLossScaling(t *testing.T) {
	s := newSession(t)
	T := keeper(t)
	p := f32(t, s, []int64{2}, 1, -2)
	must(t, p.SetRequiresGrad(true))
	sgd := of.NewSGDOptions()
	sgd.LR = 0.5
	opt, err := s.NewSGD([]*of.Tensor{p}, sgd)
	must(t, err)
	defer opt.Close()
	if scale, skipped, err := opt.LossScale(); err != nil || scale != 1 || skipped != 0 {
		t.Fatalf("loss scale while off: %v, %v, %v", scale, skipped, err)
	}
	_, err = opt.ScaleLoss(p)
	expectCode(t, err, of.CodeFailedPrecondition, "loss scaling is off")
	bad := of.NewLossScaleOptions()
	bad.GrowthInterval = 0
	expectCode(t, opt.EnableLossScaling(bad), of.CodeInvalidArgument, "growth_interval")
	o := of.NewLossScaleOptions()
	o.InitScale = 1024
	o.GrowthInterval = 2
	must(t, opt.EnableLossScaling(o))
	xs := [][]float32{{0.5, 1}, {float32(math.Inf(1)), 1}}
	for step, x := range xs {
		must(t, opt.ZeroGrad())
		loss := T(T(f32(t, s, []int64{2}, x...).Mul(p)).Sum(nil, false))
		must(t, T(opt.ScaleLoss(loss)).Backward(nil, false))
		must(t, opt.Step())
		expectValues(t, p, of.Float32, []int64{2}, 0.75, -2.5) // p -= 0.5 x, then skipped
		scale, skipped, err := opt.LossScale()
		must(t, err)
		if want := []float64{1024, 512}[step]; scale != want || skipped != int64(step) {
			t.Fatalf("step %d: scale %v skipped %d, want %v and %d", step, scale, skipped, want, step)
		}
	}
	expectCode(t, opt.EnableLossScaling(nil), of.CodeFailedPrecondition, "already on")
}
