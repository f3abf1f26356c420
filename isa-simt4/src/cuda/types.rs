//! Values, types and constant folding of the CUDA subset (32-bit `int`, `unsigned`, `bool`).

use lang_c::ast::BinaryOperator;

/// A C type of the subset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ty {
    Int,
    Uns,
    /// `bool`, and the 0/1 results of comparisons and logical operators (they promote to `int`).
    Bool,
    /// The value of a `void` call.
    Void,
}

impl Ty {
    /// The integer promotion (`bool` -> `int`).
    pub fn promote(self) -> Ty {
        if self == Ty::Bool { Ty::Int } else { self }
    }
    /// C's usual arithmetic conversions: `unsigned` if either side is.
    pub fn common(a: Ty, b: Ty) -> Ty {
        if a == Ty::Uns || b == Ty::Uns {
            Ty::Uns
        } else {
            Ty::Int
        }
    }
    /// The name for messages.
    pub fn name(self) -> &'static str {
        match self {
            Ty::Int => "int",
            Ty::Uns => "unsigned",
            Ty::Bool => "bool",
            Ty::Void => "void",
        }
    }
}

/// An expression's value: a constant or a register (`temp`: owned by the expression, freed after use).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum V {
    C(u32, Ty),
    R(u8, Ty, bool),
}

impl V {
    pub fn ty(self) -> Ty {
        match self {
            V::C(_, t) | V::R(_, t, _) => t,
        }
    }
    /// The same value with another type (int <-> unsigned share their bits).
    pub fn retype(self, t: Ty) -> V {
        match self {
            V::C(c, _) => V::C(c, t),
            V::R(r, _, tmp) => V::R(r, t, tmp),
        }
    }
}

/// Unsigned division and remainder with the machine's rules (`x / 0 = all ones`, `x % 0 = x`).
pub(crate) fn udivrem(a: u32, b: u32) -> (u32, u32) {
    match (a.checked_div(b), a.checked_rem(b)) {
        (Some(q), Some(r)) => (q, r),
        _ => (u32::MAX, a),
    }
}

/// Signed division and remainder with truncation and the machine's rules (`x / 0 = -1`, `x % 0 = x`,
/// `INT_MIN / -1 = INT_MIN`, `INT_MIN % -1 = 0`).
pub(crate) fn sdivrem(a: i32, b: i32) -> (i32, i32) {
    if b == 0 {
        (-1, a)
    } else {
        (a.wrapping_div(b), a.wrapping_rem(b))
    }
}

/// Fold a binary operator on constants of type `ty` (already converted: the common type, or the promoted
/// left type for shifts). `None`: not a foldable arithmetic operator.
pub(crate) fn fold(op: &BinaryOperator, a: u32, b: u32, ty: Ty) -> Option<u32> {
    use BinaryOperator as B;
    let s = ty != Ty::Uns;
    let (ai, bi) = (a as i32, b as i32);
    let lt = |x: u32, y: u32| if s { (x as i32) < (y as i32) } else { x < y };
    Some(match op {
        B::Multiply => a.wrapping_mul(b),
        B::Divide => {
            if s {
                sdivrem(ai, bi).0 as u32
            } else {
                udivrem(a, b).0
            }
        }
        B::Modulo => {
            if s {
                sdivrem(ai, bi).1 as u32
            } else {
                udivrem(a, b).1
            }
        }
        B::Plus => a.wrapping_add(b),
        B::Minus => a.wrapping_sub(b),
        B::ShiftLeft => {
            if b >= 32 {
                0
            } else {
                a << b
            }
        }
        B::ShiftRight => {
            if s {
                (ai >> b.min(31)) as u32
            } else if b >= 32 {
                0
            } else {
                a >> b
            }
        }
        B::Less => u32::from(lt(a, b)),
        B::Greater => u32::from(lt(b, a)),
        B::LessOrEqual => u32::from(!lt(b, a)),
        B::GreaterOrEqual => u32::from(!lt(a, b)),
        B::Equals => u32::from(a == b),
        B::NotEquals => u32::from(a != b),
        B::BitwiseAnd => a & b,
        B::BitwiseXor => a ^ b,
        B::BitwiseOr => a | b,
        B::LogicalAnd => u32::from(a != 0 && b != 0),
        B::LogicalOr => u32::from(a != 0 || b != 0),
        _ => return None,
    })
}

/// The arithmetic operator of a compound assignment (`+=` -> `+`).
pub(crate) fn compound_op(op: &BinaryOperator) -> Option<BinaryOperator> {
    use BinaryOperator as B;
    Some(match op {
        B::AssignMultiply => B::Multiply,
        B::AssignDivide => B::Divide,
        B::AssignModulo => B::Modulo,
        B::AssignPlus => B::Plus,
        B::AssignMinus => B::Minus,
        B::AssignShiftLeft => B::ShiftLeft,
        B::AssignShiftRight => B::ShiftRight,
        B::AssignBitwiseAnd => B::BitwiseAnd,
        B::AssignBitwiseXor => B::BitwiseXor,
        B::AssignBitwiseOr => B::BitwiseOr,
        _ => return None,
    })
}

/// The C spelling of a binary operator, for messages.
pub(crate) fn op_name(op: &BinaryOperator) -> &'static str {
    use BinaryOperator as B;
    match op {
        B::Index => "[]",
        B::Multiply => "*",
        B::Divide => "/",
        B::Modulo => "%",
        B::Plus => "+",
        B::Minus => "-",
        B::ShiftLeft => "<<",
        B::ShiftRight => ">>",
        B::Less => "<",
        B::Greater => ">",
        B::LessOrEqual => "<=",
        B::GreaterOrEqual => ">=",
        B::Equals => "==",
        B::NotEquals => "!=",
        B::BitwiseAnd => "&",
        B::BitwiseXor => "^",
        B::BitwiseOr => "|",
        B::LogicalAnd => "&&",
        B::LogicalOr => "||",
        B::Assign => "=",
        B::AssignMultiply => "*=",
        B::AssignDivide => "/=",
        B::AssignModulo => "%=",
        B::AssignPlus => "+=",
        B::AssignMinus => "-=",
        B::AssignShiftLeft => "<<=",
        B::AssignShiftRight => ">>=",
        B::AssignBitwiseAnd => "&=",
        B::AssignBitwiseXor => "^=",
        B::AssignBitwiseOr => "|=",
    }
}
