//go:build race

package oneflow_test

// raceEnabled scales the stress tests down under the race detector (about 10x slower).
const raceEnabled = true
