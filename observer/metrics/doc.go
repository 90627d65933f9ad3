// Package metrics counts what a running server does and writes the counts
// in the Prometheus text exposition format.
package metrics
