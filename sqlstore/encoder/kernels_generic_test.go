//go:build !amd64 || purego

package encoder

type kernelVariant struct {
	name string
	use  func() (restore func())
}

func kernelVariants() []kernelVariant {
	return []kernelVariant{{"Go", func() func() { return func() {} }}}
}
