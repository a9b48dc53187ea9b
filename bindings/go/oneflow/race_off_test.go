//go:build !race

package oneflow_test

const raceEnabled = false
