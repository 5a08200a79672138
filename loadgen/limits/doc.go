// Package limits reads this process's limits: threads and allowed CPUs.
package limits
