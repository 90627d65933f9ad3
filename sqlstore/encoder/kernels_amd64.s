//go:build amd64 && !purego

#include "textflag.h"

// func gemm4x16(out *float32, ldo int, in *float32, ldi int, w *float32, ldw int, k int)
// out[r][0:16] += Σ_{i<k} in[r][i] · w[i][0:16] for r < 4 (strides in floats).
TEXT ·gemm4x16(SB), NOSPLIT, $0-56
	MOVQ out+0(FP), DI
	MOVQ ldo+8(FP), R8
	MOVQ in+16(FP), SI
	MOVQ ldi+24(FP), R9
	MOVQ w+32(FP), DX
	MOVQ ldw+40(FP), R10
	MOVQ k+48(FP), CX
	SHLQ $2, R8
	SHLQ $2, R9
	SHLQ $2, R10
	LEAQ (SI)(R9*1), R11
	LEAQ (R11)(R9*1), R12
	LEAQ (R12)(R9*1), R13
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7

loop4:
	VMOVUPS      (DX), Y8
	VMOVUPS      32(DX), Y9
	VBROADCASTSS (SI), Y10
	VFMADD231PS  Y8, Y10, Y0
	VFMADD231PS  Y9, Y10, Y1
	VBROADCASTSS (R11), Y11
	VFMADD231PS  Y8, Y11, Y2
	VFMADD231PS  Y9, Y11, Y3
	VBROADCASTSS (R12), Y12
	VFMADD231PS  Y8, Y12, Y4
	VFMADD231PS  Y9, Y12, Y5
	VBROADCASTSS (R13), Y13
	VFMADD231PS  Y8, Y13, Y6
	VFMADD231PS  Y9, Y13, Y7
	ADDQ         $4, SI
	ADDQ         $4, R11
	ADDQ         $4, R12
	ADDQ         $4, R13
	ADDQ         R10, DX
	DECQ         CX
	JNZ          loop4

	VADDPS  (DI), Y0, Y0
	VMOVUPS Y0, (DI)
	VADDPS  32(DI), Y1, Y1
	VMOVUPS Y1, 32(DI)
	ADDQ    R8, DI
	VADDPS  (DI), Y2, Y2
	VMOVUPS Y2, (DI)
	VADDPS  32(DI), Y3, Y3
	VMOVUPS Y3, 32(DI)
	ADDQ    R8, DI
	VADDPS  (DI), Y4, Y4
	VMOVUPS Y4, (DI)
	VADDPS  32(DI), Y5, Y5
	VMOVUPS Y5, 32(DI)
	ADDQ    R8, DI
	VADDPS  (DI), Y6, Y6
	VMOVUPS Y6, (DI)
	VADDPS  32(DI), Y7, Y7
	VMOVUPS Y7, 32(DI)
	VZEROUPPER
	RET

// func gemm1x16(out *float32, in *float32, w *float32, ldw int, k int)
// out[0:16] += Σ_{i<k} in[i] · w[i][0:16].
TEXT ·gemm1x16(SB), NOSPLIT, $0-40
	MOVQ   out+0(FP), DI
	MOVQ   in+8(FP), SI
	MOVQ   w+16(FP), DX
	MOVQ   ldw+24(FP), R10
	MOVQ   k+32(FP), CX
	SHLQ   $2, R10
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1

loop1:
	VBROADCASTSS (SI), Y10
	VFMADD231PS  (DX), Y10, Y0
	VFMADD231PS  32(DX), Y10, Y1
	ADDQ         $4, SI
	ADDQ         R10, DX
	DECQ         CX
	JNZ          loop1

	VADDPS  (DI), Y0, Y0
	VMOVUPS Y0, (DI)
	VADDPS  32(DI), Y1, Y1
	VMOVUPS Y1, 32(DI)
	VZEROUPPER
	RET

// func cpuidex(leaf, sub uint32) (a, b, c, d uint32)
TEXT ·cpuidex(SB), NOSPLIT, $0-24
	MOVL leaf+0(FP), AX
	MOVL sub+4(FP), CX
	CPUID
	MOVL AX, a+8(FP)
	MOVL BX, b+12(FP)
	MOVL CX, c+16(FP)
	MOVL DX, d+20(FP)
	RET

// func xgetbv0() uint32
TEXT ·xgetbv0(SB), NOSPLIT, $0-4
	MOVL   $0, CX
	XGETBV
	MOVL   AX, ret+0(FP)
	RET

// func gemm4x32(out *float32, ldo int, in *float32, ldi int, w *float32, ldw int, k int)
// AVX-512: out[r][0:32] += Σ_{i<k} in[r][i] · w[i][0:32] for r < 4.
TEXT ·gemm4x32(SB), NOSPLIT, $0-56
	MOVQ   out+0(FP), DI
	MOVQ   ldo+8(FP), R8
	MOVQ   in+16(FP), SI
	MOVQ   ldi+24(FP), R9
	MOVQ   w+32(FP), DX
	MOVQ   ldw+40(FP), R10
	MOVQ   k+48(FP), CX
	SHLQ   $2, R8
	SHLQ   $2, R9
	SHLQ   $2, R10
	LEAQ   (SI)(R9*1), R11
	LEAQ   (R11)(R9*1), R12
	LEAQ   (R12)(R9*1), R13
	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1
	VXORPS Z2, Z2, Z2
	VXORPS Z3, Z3, Z3
	VXORPS Z4, Z4, Z4
	VXORPS Z5, Z5, Z5
	VXORPS Z6, Z6, Z6
	VXORPS Z7, Z7, Z7

loop32:
	VMOVUPS      (DX), Z8
	VMOVUPS      64(DX), Z9
	VBROADCASTSS (SI), Z10
	VFMADD231PS  Z8, Z10, Z0
	VFMADD231PS  Z9, Z10, Z1
	VBROADCASTSS (R11), Z11
	VFMADD231PS  Z8, Z11, Z2
	VFMADD231PS  Z9, Z11, Z3
	VBROADCASTSS (R12), Z12
	VFMADD231PS  Z8, Z12, Z4
	VFMADD231PS  Z9, Z12, Z5
	VBROADCASTSS (R13), Z13
	VFMADD231PS  Z8, Z13, Z6
	VFMADD231PS  Z9, Z13, Z7
	ADDQ         $4, SI
	ADDQ         $4, R11
	ADDQ         $4, R12
	ADDQ         $4, R13
	ADDQ         R10, DX
	DECQ         CX
	JNZ          loop32

	VADDPS  (DI), Z0, Z0
	VMOVUPS Z0, (DI)
	VADDPS  64(DI), Z1, Z1
	VMOVUPS Z1, 64(DI)
	ADDQ    R8, DI
	VADDPS  (DI), Z2, Z2
	VMOVUPS Z2, (DI)
	VADDPS  64(DI), Z3, Z3
	VMOVUPS Z3, 64(DI)
	ADDQ    R8, DI
	VADDPS  (DI), Z4, Z4
	VMOVUPS Z4, (DI)
	VADDPS  64(DI), Z5, Z5
	VMOVUPS Z5, 64(DI)
	ADDQ    R8, DI
	VADDPS  (DI), Z6, Z6
	VMOVUPS Z6, (DI)
	VADDPS  64(DI), Z7, Z7
	VMOVUPS Z7, 64(DI)
	VZEROUPPER
	RET
