package engine

import "strconv"

// mix hashes the run seed with a sequence of numbers (splitmix64 steps), so ids, jitter and
// question ids derive from the seed and a dispatch's place in the plan, never from the order in
// which goroutines happen to finish. Replaying a run reproduces them exactly.
func mix(seed uint64, parts ...uint64) uint64 {
	x := seed
	for _, p := range parts {
		x ^= p + 0x9e3779b97f4a7c15 + (x << 6) + (x >> 2)
		x = splitmix(x)
	}
	return splitmix(x)
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// base36 formats x with a prefix: run_…, trace_…, sess_…, qry_….
func base36(prefix string, x uint64) string {
	var buf [32]byte
	return string(strconv.AppendUint(append(buf[:0], prefix...), x, 36))
}

// Salts that keep the derived streams apart.
const (
	saltRun uint64 = iota + 1
	saltTrace
	saltSession
	saltQuery
	saltDispatch
	saltJitter
)
