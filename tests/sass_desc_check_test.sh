#!/usr/bin/env bash
# scripts/sass_desc_check.py on SASS text shaped as cuobjdump prints it: a kernel whose copies
# read a descriptor pair written before them passes; one whose copy reads an odd register pair
# nothing writes (the fifty-eighth session's faulting LDGSTS, verbatim) fails, and is named; so
# do one whose pair is even but half written, and one whose odd pair is written (a lab build's
# folded LDGSTS, sixtieth session, verbatim).
set -uo pipefail
check=$(dirname "$0")/../scripts/sass_desc_check.py
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

good='		Function : _Z4goodv
        /*0020*/                   ULDC.64 UR4, c[0x0][0x208] ;
        /*0030*/                   LDG.E.U16.CONSTANT R5, desc[UR4][R6.64] ;
        /*04f0*/              @!P1 R2UR UR18, R18.reuse ;
        /*0500*/              @!P1 R2UR UR19, R19.reuse ;
        /*0590*/              @!P1 LDGSTS.E.BYPASS.128 [R5+0x8000], desc[UR18][R10.64+-0x800] ;'
bad='		Function : _Z3badv
        /*0020*/                   ULDC.64 UR18, c[0x0][0x208] ;
        /*0030*/                   LDG.E.U16.CONSTANT R5, desc[UR18][R6.64] ;
        /*1080*/              @!P5 LDGSTS.E.BYPASS.128 [R7+UR0], desc[UR1][R10.64] ;'
odd='		Function : _Z3oddv
        /*0f50*/                   UIADD3 UR15, UP0, UR8, UR6, URZ ;
        /*0f60*/                   UIADD3.X UR16, URZ, UR7, URZ, UP0, !UPT ;
        /*1140*/                   UMOV UR15, 0x14f00000 ;
        /*1230*/              @!P4 LDGSTS.E.BYPASS.128 [R14+UR14], desc[UR15][R32.64] ;'
half='		Function : _Z4halfv
        /*04f0*/                   R2UR UR18, R18 ;
        /*0590*/                   LDGSTS.E.BYPASS.128 [R5], desc[UR18][R10.64] ;'

printf '%s\n' "$good" >"$dir/good.sass"
out=$(python3 "$check" "$dir/good.sass") || fail "a kernel with written descriptors was flagged: $out"
grep -q "1 kernels, 1 with async copies, 0 reading" <<<"$out" || fail "good: $out"

printf '%s\n%s\n' "$good" "$bad" >"$dir/mixed.sass"
out=$(python3 "$check" "$dir/mixed.sass") && fail "an odd, unwritten descriptor passed: $out"
grep -q "^bad(): 1 of 2 accesses read a descriptor in an odd register" <<<"$out" || fail "mixed: $out"
grep -q "good()" <<<"$out" && fail "the good kernel was named: $out"

printf '%s\n' "$odd" >"$dir/odd.sass"
out=$(python3 "$check" "$dir/odd.sass") && fail "a written odd descriptor pair passed: $out"
grep -q "^odd(): 1 of 1 accesses read a descriptor in an odd register" <<<"$out" || fail "odd: $out"

printf '%s\n' "$half" >"$dir/half.sass"
python3 "$check" "$dir/half.sass" >/dev/null && fail "a pair with only its low register written passed"

: >"$dir/empty.sass"
python3 "$check" "$dir/empty.sass" >/dev/null 2>&1 && fail "a file without kernels passed"
echo "sass_desc_check: all cases as expected"
