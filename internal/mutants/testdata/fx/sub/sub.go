package sub

func Neg(a int) int { return -a }
