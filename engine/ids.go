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

// runIDs derives a run's run, session, query and trace ids from its seed, in one allocation.
func runIDs(seed uint64) (run, session, query, trace string) {
	var buf [96]byte
	b := buf[:0]
	var ends [4]int
	for i, p := range [...]struct {
		prefix string
		salt   uint64
	}{{"run_", saltRun}, {"sess_", saltSession}, {"qry_", saltQuery}, {"trace_", saltTrace}} {
		b = strconv.AppendUint(append(b, p.prefix...), mix(seed, p.salt), 36)
		ends[i] = len(b)
	}
	all := string(b)
	return all[:ends[0]], all[ends[0]:ends[1]], all[ends[1]:ends[2]], all[ends[2]:]
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
