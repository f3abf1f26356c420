//! Declarations and storage: the lane's registers (allocation, release, moves), names and scopes, declaration
//! specifiers and declarators (also of parameters and functions), local and `__shared__` declarations (the
//! placement of shared arrays), file-scope constants, and the arrays: element addresses, loads and stores.

use super::{Arr, Bind, Cg, FIRST_REG, LAST_REG, PTy, R, Scope, Specs};
use crate::cuda::front::Qual;
use crate::cuda::types::{Ty, V};
use crate::isa::{Instr, Opcode as O};
use lang_c::ast::*;
use lang_c::span::{Node, Span};

impl<'a> Cg<'a> {
    // ------------------------------------------------------------------ registers

    pub(super) fn alloc(&mut self, span: &Span) -> R<u8> {
        for r in FIRST_REG..=LAST_REG {
            if !self.used[r as usize] {
                self.used[r as usize] = true;
                return Ok(r);
            }
        }
        self.err(span, "too many live values: the expression and the variables in scope need more than the 30 registers of a lane")
    }
    pub(super) fn free_reg(&mut self, r: u8) {
        if (FIRST_REG..=LAST_REG).contains(&r) {
            self.used[r as usize] = false;
        }
    }
    pub(super) fn release(&mut self, v: V) {
        if let V::R(r, _, true) = v {
            self.free_reg(r);
        }
    }
    /// The value in a register (constants are loaded into a temporary; 0 is `r0`).
    pub(super) fn in_reg(&mut self, v: V, span: &Span) -> R<V> {
        match v {
            V::C(0, t) => Ok(V::R(0, t, false)),
            V::C(c, t) => {
                let r = self.alloc(span)?;
                self.emit(Instr::rri(O::Add, r, 0, c));
                Ok(V::R(r, t, true))
            }
            r => Ok(r),
        }
    }
    /// The value in a register the caller owns.
    pub(super) fn owned_reg(&mut self, v: V, span: &Span) -> R<u8> {
        match v {
            V::R(r, _, true) => Ok(r),
            _ => {
                let r = self.alloc(span)?;
                self.store_to(r, v);
                Ok(r)
            }
        }
    }
    pub(super) fn reg_of(v: V) -> u8 {
        match v {
            V::R(r, _, _) => r,
            V::C(..) => 0,
        }
    }
    /// `dst = v` (releases `v`). A temporary computed by the last instruction is retargeted instead of copied.
    pub(super) fn store_to(&mut self, dst: u8, v: V) {
        match v {
            V::C(c, _) => {
                self.emit(Instr::rri(O::Add, dst, 0, c));
            }
            V::R(r, _, tmp) => {
                if r == dst {
                    return;
                }
                let last = self.code.last().copied();
                if tmp
                    && r != 0
                    && last.is_some_and(|i| {
                        i.rd == r
                            && ((i.op.is_alu() && i.op != O::Cmov)
                                || i.op.is_div()
                                || matches!(i.op, O::Ldg | O::Lds))
                    })
                {
                    self.code.last_mut().unwrap().rd = dst;
                } else {
                    self.emit(Instr::rri(O::Add, dst, r, 0));
                }
                self.release(v);
            }
        }
    }

    // ------------------------------------------------------------------ names

    pub(super) fn lookup(&self, name: &str) -> Option<Bind> {
        let base = self.frames.last().map_or(0, |f| f.scope_base);
        for s in self.scopes[base..].iter().rev() {
            if let Some(b) = s.binds.get(name) {
                return Some(*b);
            }
        }
        self.scopes[0].binds.get(name).copied()
    }
    pub(super) fn bind(&mut self, name: &str, b: Bind) {
        self.scopes
            .last_mut()
            .unwrap()
            .binds
            .insert(name.to_string(), b);
    }
    pub(super) fn push_scope(&mut self) {
        self.scopes.push(Scope::default());
    }
    pub(super) fn pop_scope(&mut self) {
        let s = self.scopes.pop().unwrap();
        for r in s.owned {
            self.free_reg(r);
        }
    }
    pub(super) fn own(&mut self, r: u8) {
        self.scopes.last_mut().unwrap().owned.push(r);
    }

    // ------------------------------------------------------------------ types and declarators

    pub(super) fn spec_type(&self, ts: &[(&Node<TypeSpecifier>, Span)], is_fn: bool) -> R<Ty> {
        let mut uns = false;
        let mut bool_ = false;
        let mut void = false;
        let mut any = false;
        for (t, _) in ts {
            let sp = &t.span;
            match &t.node {
                TypeSpecifier::Int | TypeSpecifier::Signed => any = true,
                TypeSpecifier::Unsigned => {
                    uns = true;
                    any = true
                }
                TypeSpecifier::Bool => bool_ = true,
                TypeSpecifier::Void => void = true,
                TypeSpecifier::TypedefName(id) => match id.node.name.as_str() {
                    "bool" => bool_ = true,
                    "uint" | "uint32_t" => {
                        uns = true;
                        any = true
                    }
                    "int32_t" => any = true,
                    n => {
                        return self.err(
                            sp,
                            format!("type {n} is not supported (int, unsigned, bool)"),
                        );
                    }
                },
                TypeSpecifier::Long => {
                    return self.err(
                        sp,
                        "long is not supported (32-bit int, unsigned and bool only)",
                    );
                }
                TypeSpecifier::Short => {
                    return self.err(
                        sp,
                        "short is not supported (32-bit int, unsigned and bool only)",
                    );
                }
                TypeSpecifier::Char => {
                    return self.err(
                        sp,
                        "char is not supported (32-bit int, unsigned and bool only)",
                    );
                }
                TypeSpecifier::Float => {
                    return self.err(sp, "float is not supported (integer types only)");
                }
                TypeSpecifier::Double => {
                    return self.err(sp, "double is not supported (integer types only)");
                }
                TypeSpecifier::Struct(s) => {
                    let k = if s.node.kind.node == StructKind::Union {
                        "union"
                    } else {
                        "struct"
                    };
                    return self.err(sp, format!("{k} types are not supported"));
                }
                TypeSpecifier::Enum(_) => return self.err(sp, "enum types are not supported"),
                _ => return self.err(sp, "this type is not supported (int, unsigned, bool)"),
            }
        }
        let _ = any;
        if void {
            if !is_fn {
                let sp = ts.first().map_or(Span::none(), |t| t.1);
                return self.err(&sp, "void is only a function's return type here");
            }
            return Ok(Ty::Void);
        }
        Ok(if bool_ {
            Ty::Bool
        } else if uns {
            Ty::Uns
        } else {
            Ty::Int
        })
    }

    /// The type of declaration specifiers, whether `const`, and the storage class if any.
    pub(super) fn decl_specs(
        &self,
        specs: &[Node<DeclarationSpecifier>],
        is_fn: bool,
        span: &Span,
    ) -> R<Specs> {
        let mut ts = Vec::new();
        let mut is_const = false;
        let mut storage = None;
        for s in specs {
            match &s.node {
                DeclarationSpecifier::TypeSpecifier(t) => ts.push((t, t.span)),
                DeclarationSpecifier::TypeQualifier(q) => match q.node {
                    TypeQualifier::Const => is_const = true,
                    TypeQualifier::Volatile | TypeQualifier::Restrict => {}
                    _ => return self.err(&q.span, "this type qualifier is not supported"),
                },
                DeclarationSpecifier::StorageClass(c) => storage = Some((c.node.clone(), c.span)),
                DeclarationSpecifier::Function(_) | DeclarationSpecifier::Extension(_) => {}
                DeclarationSpecifier::Alignment(a) => {
                    return self.err(&a.span, "_Alignas is not supported");
                }
            }
        }
        if ts.is_empty() {
            return self.err(span, "a declaration without a type");
        }
        Ok((self.spec_type(&ts, is_fn)?, is_const, storage))
    }

    pub(super) fn type_name(&self, tn: &Node<TypeName>) -> R<Ty> {
        let mut ts = Vec::new();
        for s in &tn.node.specifiers {
            match &s.node {
                SpecifierQualifier::TypeSpecifier(t) => ts.push((t, t.span)),
                SpecifierQualifier::TypeQualifier(_) | SpecifierQualifier::Extension(_) => {}
            }
        }
        if let Some(d) = &tn.node.declarator
            && !d.node.derived.is_empty()
        {
            return self.err(&d.span, "casts to pointer or array types are not supported");
        }
        if ts.is_empty() {
            return self.err(&tn.span, "a type name without a type");
        }
        let t = self.spec_type(&ts, false)?;
        Ok(t)
    }

    /// A declarator's name and derived parts (pointer, arrays, function), innermost first as lang-c gives them.
    pub(super) fn declarator<'d>(
        &self,
        d: &'d Node<Declarator>,
    ) -> R<(&'d Node<Identifier>, &'d [Node<DerivedDeclarator>])> {
        match &d.node.kind.node {
            DeclaratorKind::Identifier(id) => Ok((id, &d.node.derived)),
            DeclaratorKind::Abstract => self.err(&d.span, "a declaration without a name"),
            DeclaratorKind::Declarator(_) => self.err(&d.span, "parenthesized declarators (function pointers, pointers to arrays) are not supported"),
        }
    }

    pub(super) fn param_types(&self, fd: &FunctionDeclarator) -> R<Vec<(String, Span, PTy)>> {
        let mut out = Vec::new();
        for p in &fd.parameters {
            let (ty, is_const, storage) = self.decl_specs(&p.node.specifiers, true, &p.span)?;
            if let Some((_, sp)) = storage {
                return self.err(&sp, "storage classes on parameters are not supported");
            }
            let Some(d) = &p.node.declarator else {
                if ty == Ty::Void && fd.parameters.len() == 1 {
                    return Ok(out);
                }
                return self.err(&p.span, "a parameter without a name");
            };
            let (id, derived) = self.declarator(d)?;
            let pointer =
                match derived {
                    [] => false,
                    [x] if matches!(x.node, DerivedDeclarator::Pointer(_)) => true,
                    [x] if matches!(x.node, DerivedDeclarator::Array(_)) => true,
                    _ => return self.err(
                        &d.span,
                        "pointers to pointers and other compound parameter types are not supported",
                    ),
                };
            if ty == Ty::Void {
                return self.err(&p.span, "void parameters are not supported");
            }
            if pointer && ty == Ty::Bool {
                return self.err(
                    &p.span,
                    "bool arrays are not supported (int * and unsigned * only)",
                );
            }
            out.push((
                id.node.name.clone(),
                id.span,
                PTy {
                    ty,
                    pointer,
                    is_const,
                },
            ));
        }
        if fd.ellipsis == Ellipsis::Some {
            return Err(self.err_at(&Span::none(), "variadic functions are not supported"));
        }
        Ok(out)
    }

    /// The function declarator of a definition.
    pub(super) fn fn_decl<'d>(
        &self,
        f: &'d Node<FunctionDefinition>,
    ) -> R<(&'d Node<Identifier>, &'d FunctionDeclarator)> {
        let (id, derived) = self.declarator(&f.node.declarator)?;
        match derived {
            [x] => match &x.node {
                DerivedDeclarator::Function(fd) => Ok((id, &fd.node)),
                DerivedDeclarator::KRFunction(ids) if ids.is_empty() => Ok((id, &EMPTY_FD)),
                DerivedDeclarator::KRFunction(_) => {
                    self.err(&f.span, "K&R-style parameter lists are not supported")
                }
                _ => self.err(&f.span, "functions returning pointers are not supported"),
            },
            _ => self.err(&f.span, "functions returning pointers are not supported"),
        }
    }

    // ------------------------------------------------------------------ declarations

    pub(super) fn declaration(&mut self, d: &Node<Declaration>) -> R<()> {
        self.set_line(&d.span);
        let spec_end = d
            .node
            .declarators
            .first()
            .map_or(d.span.end, |x| x.span.start);
        let quals = self.p.quals_of(d.span.start, spec_end);
        let shared = quals.iter().any(|q| q.1 == Qual::Shared);
        if let Some((_, k)) = quals
            .iter()
            .find(|q| matches!(q.1, Qual::Global | Qual::Device))
        {
            let w = if *k == Qual::Global {
                "__global__"
            } else {
                "__device__"
            };
            return self.err(
                &d.span,
                format!(
                    "{w} variables are not supported (only __shared__ arrays and local scalars)"
                ),
            );
        }
        let (ty, is_const, storage) = self.decl_specs(&d.node.specifiers, false, &d.span)?;
        match storage {
            Some((StorageClassSpecifier::Extern, sp)) if shared => {
                return self.err(&sp, "extern __shared__ (dynamic shared memory) is not supported: give the array a fixed size");
            }
            Some((StorageClassSpecifier::Typedef, sp)) => {
                return self.err(&sp, "typedef is not supported");
            }
            Some((StorageClassSpecifier::Static, sp)) if !shared => {
                return self.err(&sp, "static variables are not supported");
            }
            Some((StorageClassSpecifier::Static, _)) => {}
            Some((_, sp)) => return self.err(&sp, "this storage class is not supported"),
            None => {}
        }
        for id in &d.node.declarators {
            let (name, derived) = self.declarator(&id.node.declarator)?;
            let nm = name.node.name.clone();
            if shared {
                if id.node.initializer.is_some() {
                    return self.err(&id.span, "__shared__ arrays cannot have initializers");
                }
                let mut dims = Vec::new();
                for x in derived {
                    match &x.node {
                        DerivedDeclarator::Array(a) => match &a.node.size {
                            ArraySize::VariableExpression(e) | ArraySize::StaticExpression(e) => {
                                let v = self.dead(|s| s.expr(e))?;
                                match v {
                                    V::C(n, _) if (n as i32) > 0 => dims.push(n),
                                    V::C(..) => return self.err(&e.span, format!("__shared__ array {nm} must have a positive size")),
                                    _ => return self.err(&e.span, format!("the size of __shared__ array {nm} must be a constant")),
                                }
                            }
                            _ => return self.err(&x.span, format!("__shared__ array {nm} needs a fixed size (dynamic shared memory is not supported)")),
                        },
                        _ => return self.err(&x.span, "__shared__ variables must be arrays of int, unsigned (1-D or 2-D)"),
                    }
                }
                if dims.is_empty() || dims.len() > 2 {
                    return self.err(
                        &id.span,
                        format!("__shared__ {nm} must be a 1-D or 2-D array"),
                    );
                }
                if ty == Ty::Bool {
                    return self.err(&id.span, "bool arrays are not supported (int and unsigned)");
                }
                let key = (d.span.start, nm.clone());
                let idx = match self.shared_decls.get(&key) {
                    Some(i) => *i,
                    None => {
                        let len = dims.iter().map(|x| u64::from(*x)).product::<u64>();
                        let end = u64::from(self.shared_next) + len;
                        if end > u64::from(self.cfg.shared_words) || len > 0xFFFF {
                            return self.err(
                                &id.span,
                                format!("__shared__ arrays need {end} words of shared memory; the machine has {} (shared_words)", self.cfg.shared_words),
                            );
                        }
                        self.arrays.push(Arr {
                            name: nm.clone(),
                            shared: true,
                            base: self.shared_next,
                            len: len as u32,
                            cols: if dims.len() == 2 { Some(dims[1]) } else { None },
                            ty,
                            is_const,
                        });
                        self.shared_next = end as u32;
                        self.shared_decls.insert(key, self.arrays.len() - 1);
                        self.arrays.len() - 1
                    }
                };
                self.bind(&nm, Bind::Arr(idx));
                continue;
            }
            if let Some(x) = derived.first() {
                return match &x.node {
                    DerivedDeclarator::Pointer(_) => self.err(&x.span, format!("pointer variables are not supported ({nm}): index a pointer parameter (p[i])")),
                    DerivedDeclarator::Array(_) => self.err(&x.span, format!("local arrays are not supported ({nm}): use a __shared__ array")),
                    _ => self.err(&x.span, format!("function declarations inside a function are not supported ({nm})")),
                };
            }
            if ty == Ty::Void {
                return self.err(&id.span, "void variables are not supported");
            }
            match &id.node.initializer {
                None => {
                    let r = self.alloc(&id.span)?;
                    self.own(r);
                    self.bind(&nm, Bind::Var(r, ty));
                }
                Some(init) => {
                    let e = match &init.node {
                        Initializer::Expression(e) => e,
                        Initializer::List(_) => {
                            return self.err(&init.span, "initializer lists are not supported");
                        }
                    };
                    self.set_line(&e.span);
                    let v = self.expr(e)?;
                    let v = self.convert(v, ty, &e.span)?;
                    let r = match v {
                        V::R(r, _, true) => r,
                        _ => {
                            let r = self.alloc(&id.span)?;
                            self.store_to(r, v);
                            r
                        }
                    };
                    self.own(r);
                    self.bind(&nm, Bind::Var(r, ty));
                }
            }
        }
        Ok(())
    }

    /// A file-scope `const int N = <constant>;` (no qualifiers): bound as a constant. `false`: not one.
    pub(super) fn file_const(&mut self, d: &Node<Declaration>) -> R<bool> {
        let spec_end = d
            .node
            .declarators
            .first()
            .map_or(d.span.end, |x| x.span.start);
        if !self.p.quals_of(d.span.start, spec_end).is_empty() {
            return Ok(false);
        }
        let (ty, is_const, storage) = self.decl_specs(&d.node.specifiers, false, &d.span)?;
        if !is_const || !matches!(storage, None | Some((StorageClassSpecifier::Static, _))) {
            return Ok(false);
        }
        let mut binds = Vec::new();
        for id in &d.node.declarators {
            let (name, derived) = self.declarator(&id.node.declarator)?;
            let Some(Initializer::Expression(e)) = id.node.initializer.as_ref().map(|i| &i.node)
            else {
                return Ok(false);
            };
            if !derived.is_empty() {
                return Ok(false);
            }
            let v = self.dead(|s| s.expr(e))?;
            let V::C(c, _) = self.dead(|s| s.convert(v, ty, &e.span))? else {
                return self.err(
                    &e.span,
                    format!(
                        "the value of file-scope constant {} must be a constant",
                        name.node.name
                    ),
                );
            };
            binds.push((name.node.name.clone(), c));
        }
        for (n, c) in binds {
            self.scopes[0].binds.insert(n, Bind::Const(c, ty));
        }
        Ok(true)
    }

    // ------------------------------------------------------------------ arrays

    /// An array element: the array and its (flattened) index in a register.
    pub(super) fn element(&mut self, e: &Node<Expression>) -> R<(usize, V)> {
        let Expression::BinaryOperator(b) = &e.node else {
            return self.err(&e.span, "expected an array element a[i]");
        };
        if b.node.operator.node != BinaryOperator::Index {
            return self.err(&e.span, "expected an array element a[i]");
        }
        self.element_of(&b.node, &e.span)
    }
    /// The array and index of `a[i]` or `s[i][j]` (`b` is the outer `[]`).
    pub(super) fn element_of(&mut self, b: &BinaryOperatorExpression, sp: &Span) -> R<(usize, V)> {
        let e = &Node::new((), *sp);
        let (lhs, rhs) = (&b.lhs, &b.rhs);
        let (arr, idx) = match &lhs.node {
            Expression::Identifier(id) => {
                let a = self.array_named(&id.node.name, &lhs.span)?;
                if self.arrays[a].cols.is_some() {
                    return self.err(
                        &e.span,
                        format!(
                            "{} is 2-D: index it as {}[i][j]",
                            id.node.name, id.node.name
                        ),
                    );
                }
                let i = self.expr(rhs)?;
                let i = self.index_value(i, &rhs.span)?;
                (a, i)
            }
            Expression::BinaryOperator(b2) if b2.node.operator.node == BinaryOperator::Index => {
                let Expression::Identifier(id) = &b2.node.lhs.node else {
                    return self.err(
                        &lhs.span,
                        "only arrays (pointer parameters and __shared__ arrays) can be indexed",
                    );
                };
                let a = self.array_named(&id.node.name, &b2.node.lhs.span)?;
                let Some(cols) = self.arrays[a].cols else {
                    return self.err(
                        &e.span,
                        format!("{} is 1-D: index it as {}[i]", id.node.name, id.node.name),
                    );
                };
                let i = self.expr(&b2.node.rhs)?;
                let i = self.index_value(i, &b2.node.rhs.span)?;
                let j = self.expr(rhs)?;
                let j = self.index_value(j, &rhs.span)?;
                let row = self.arith(&BinaryOperator::Multiply, i, V::C(cols, Ty::Uns), &e.span)?;
                (a, self.arith(&BinaryOperator::Plus, row, j, &e.span)?)
            }
            _ => {
                return self.err(
                    &lhs.span,
                    "only arrays (pointer parameters and __shared__ arrays) can be indexed",
                );
            }
        };
        let idx = self.in_reg(idx, &e.span)?;
        Ok((arr, idx))
    }
    pub(super) fn index_value(&self, v: V, sp: &Span) -> R<V> {
        let v = self.not_void(v, sp)?;
        Ok(v.retype(Ty::Uns))
    }
    pub(super) fn array_named(&self, name: &str, sp: &Span) -> R<usize> {
        match self.lookup(name) {
            Some(Bind::Arr(a)) => Ok(a),
            Some(_) => self.err(sp, format!("{name} is not an array (only pointer parameters and __shared__ arrays can be indexed)")),
            None => self.err(sp, format!("unknown array {name}")),
        }
    }
    pub(super) fn mem_instr(&self, a: usize, load: bool, atomic: bool, rd: u8, idx: u8, data: u8) -> Instr {
        let ar = &self.arrays[a];
        let op = match (ar.shared, load, atomic) {
            (true, _, true) => O::Atoms,
            (false, _, true) => O::Atomg,
            (true, true, _) => O::Lds,
            (false, true, _) => O::Ldg,
            (true, false, _) => O::Sts,
            (false, false, _) => O::Stg,
        };
        Instr::mem(op, rd, idx, data, ar.base as u16, ar.len as u16)
    }
    pub(super) fn load(&mut self, a: usize, idx: V, sp: &Span) -> R<V> {
        let ir = Self::reg_of(idx);
        let dst = match idx {
            V::R(r, _, true) => r,
            _ => self.alloc(sp)?,
        };
        self.set_line(sp);
        let i = self.mem_instr(a, true, false, dst, ir, 0);
        self.emit(i);
        Ok(V::R(dst, self.arrays[a].ty, true))
    }
    pub(super) fn store(&mut self, a: usize, idx: V, v: V, sp: &Span) -> R<V> {
        if self.arrays[a].is_const {
            return self.err(
                sp,
                format!("{} is const: it cannot be written", self.arrays[a].name),
            );
        }
        let v = self.convert(v, self.arrays[a].ty, sp)?;
        let v = self.in_reg(v, sp)?;
        self.set_line(sp);
        let i = self.mem_instr(a, false, false, 0, Self::reg_of(idx), Self::reg_of(v));
        self.emit(i);
        self.release(idx);
        Ok(v)
    }
}

/// The parameters of `f()`.
static EMPTY_FD: FunctionDeclarator = FunctionDeclarator {
    parameters: Vec::new(),
    ellipsis: Ellipsis::None,
};
