package encoder

var (
	axpy  = axpyGeneric
	axpy4 = axpy4Generic
)
