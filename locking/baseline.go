package locking

// Baseline is the strategy every other is compared with: ratios are taken
// to its figures. It is kernfs's global mutex before Linux 5.15, the
// design the seed's series replaced (TestBaseline).
const Baseline = "mutex"
