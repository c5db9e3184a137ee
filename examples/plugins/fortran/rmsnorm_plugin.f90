! An example moacert plugin in Fortran (bind(C)): rmsnorm in f64,
! y = x / sqrt(mean(x^2) + eps) * w, honouring any strides
! (docs/plugins.md).
!
! Build (gfortran; no header needed: the DLTensor and moacert_kernel
! structs are declared below as interoperable derived types, matching
! DLPack's DLTensor and include/moacert/plugin.h):
!
!   gfortran -O2 -fPIC -shared rmsnorm_plugin.f90 -o libmoacert_fortran_example.so
!
! Certify:
!
!   moacert certify rmsnorm --plugin ./libmoacert_fortran_example.so --dtype f64
!
! CTest builds it (when CMake finds a Fortran compiler) and certifies it.
module moacert_fortran_example
  use, intrinsic :: iso_c_binding
  implicit none
  private
  public :: moacert_plugin_kernels

  ! DLPack's DLTensor (dlpack.h): data, device {type, id}, ndim, dtype
  ! {code, bits, lanes}, shape, strides, byte_offset.
  type, bind(C) :: dl_tensor
    type(c_ptr) :: data
    integer(c_int32_t) :: device_type, device_id
    integer(c_int32_t) :: ndim
    integer(c_int8_t) :: code, bits
    integer(c_int16_t) :: lanes
    type(c_ptr) :: shape, strides
    integer(c_int64_t) :: byte_offset
  end type dl_tensor

  ! moacert_kernel (include/moacert/plugin.h).
  type, bind(C) :: moacert_kernel
    type(c_ptr) :: op, name, dtype
    integer(c_int) :: accepts_strided
    type(c_funptr) :: run
  end type moacert_kernel

  interface
    ! The params JSON is read with the C library's strstr and strtod.
    type(c_ptr) function c_strstr(haystack, needle) bind(C, name="strstr")
      import :: c_ptr
      type(c_ptr), value :: haystack, needle
    end function c_strstr
    real(c_double) function c_strtod(str, endptr) bind(C, name="strtod")
      import :: c_ptr, c_double
      type(c_ptr), value :: str, endptr
    end function c_strtod
  end interface

  character(kind=c_char, len=8), target, save :: op_name = "rmsnorm" // c_null_char
  character(kind=c_char, len=8), target, save :: kernel_name = "rmsnorm" // c_null_char
  character(kind=c_char, len=4), target, save :: dtype_name = "f64" // c_null_char
  character(kind=c_char, len=7), target, save :: eps_key = '"eps":' // c_null_char
  character(kind=c_char, len=40), target, save :: bad_arity = &
    "rmsnorm: expected 2 inputs and 1 output" // c_null_char
  type(moacert_kernel), target, save :: table(1)

contains

  ! The eps of the params JSON ({"eps":1e-06}), or 1e-6.
  real(c_double) function eps_of(params)
    type(c_ptr), value :: params
    type(c_ptr) :: at
    character(kind=c_char), pointer :: chars(:)
    eps_of = 1.0d-6
    at = c_strstr(params, c_loc(eps_key))
    if (.not. c_associated(at)) return
    call c_f_pointer(at, chars, [7])
    eps_of = c_strtod(c_loc(chars(7)), c_null_ptr)  ! past '"eps":'
  end function eps_of

  integer(c_int) function rmsnorm_f64(inputs, n_inputs, outputs, n_outputs, params, err, &
                                      err_len) bind(C)
    type(c_ptr), value :: inputs, outputs, params, err
    integer(c_int), value :: n_inputs, n_outputs
    integer(c_size_t), value :: err_len
    type(c_ptr), pointer :: ins(:), outs(:)
    type(dl_tensor), pointer :: x, w, y
    integer(c_int64_t), pointer :: xshape(:), xs(:), ws(:), ys(:)
    real(c_double), pointer :: xd(:), wd(:), yd(:)
    integer(c_int64_t) :: rows, d, t, j
    real(c_double) :: eps, ss, r
    character(kind=c_char), pointer :: message(:)

    if (n_inputs /= 2 .or. n_outputs /= 1) then
      ! The message, NUL-terminated, cut to err_len bytes.
      call c_f_pointer(err, message, [err_len])
      do j = 1, min(int(err_len, c_int64_t), int(len(bad_arity), c_int64_t))
        message(j) = bad_arity(j:j)
      end do
      message(err_len) = c_null_char
      rmsnorm_f64 = 1
      return
    end if
    call c_f_pointer(inputs, ins, [2])
    call c_f_pointer(outputs, outs, [1])
    call c_f_pointer(ins(1), x)
    call c_f_pointer(ins(2), w)
    call c_f_pointer(outs(1), y)
    call c_f_pointer(x%shape, xshape, [2])
    call c_f_pointer(x%strides, xs, [2])
    call c_f_pointer(w%strides, ws, [1])
    call c_f_pointer(y%strides, ys, [2])
    rows = xshape(1)
    d = xshape(2)
    ! Each tensor as a flat array long enough for its last element
    ! (strides are in elements; element (t, j) is at 1 + t*s(1) + j*s(2)).
    call c_f_pointer(x%data, xd, [1 + (rows - 1) * xs(1) + (d - 1) * xs(2)])
    call c_f_pointer(w%data, wd, [1 + (d - 1) * ws(1)])
    call c_f_pointer(y%data, yd, [1 + (rows - 1) * ys(1) + (d - 1) * ys(2)])
    eps = eps_of(params)

    do t = 0, rows - 1
      ss = 0
      do j = 0, d - 1
        ss = ss + xd(1 + t * xs(1) + j * xs(2))**2
      end do
      r = 1 / sqrt(ss / real(d, c_double) + eps)
      do j = 0, d - 1
        yd(1 + t * ys(1) + j * ys(2)) = xd(1 + t * xs(1) + j * xs(2)) * r * wd(1 + j * ws(1))
      end do
    end do
    rmsnorm_f64 = 0
  end function rmsnorm_f64

  ! The one symbol a plugin exports.
  type(c_ptr) function moacert_plugin_kernels(count, abi_version) &
      bind(C, name="moacert_plugin_kernels")
    integer(c_int), intent(out) :: count, abi_version
    table(1) = moacert_kernel(c_loc(op_name), c_loc(kernel_name), c_loc(dtype_name), 1, &
                              c_funloc(rmsnorm_f64))
    count = 1
    abi_version = 1  ! MOACERT_PLUGIN_ABI
    moacert_plugin_kernels = c_loc(table)
  end function moacert_plugin_kernels

end module moacert_fortran_example
