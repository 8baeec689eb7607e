//! A short list kept inside its owner: the DOFs and values of the small elements.

use std::fmt;
use std::ops::{Deref, DerefMut};

/// A list of up to `N` items stored inline (in the element itself, no heap block of its own),
/// longer ones in one boxed slice. It reads like the slice of its items.
///
/// Issue 20: a spring's two DOFs and a lumped mass's DOFs and values were a `Vec` each, a
/// heap block of 8–48 bytes apiece beside the element's own (glibc rounds every block up to
/// 32 bytes at least and adds 8 to 16 bytes of its own: on the 10⁵-DOF chain three of the
/// five blocks a storey held).
#[derive(Clone)]
pub struct SmallList<T, const N: usize> {
    items: Items<T, N>,
}

#[derive(Clone)]
enum Items<T, const N: usize> {
    /// `len ≤ N` items in `items[..len]` (the rest repeat the first item: no `Default` needed).
    Inline { len: u8, items: [T; N] },
    /// More than `N` items, or none.
    Boxed(Box<[T]>),
}

impl<T: Clone, const N: usize> SmallList<T, N> {
    /// The list of `items`, inline when there are 1 to `N` of them.
    pub fn new(items: Vec<T>) -> Self {
        let len = items.len();
        if len == 0 || len > N || N > u8::MAX as usize {
            return Self {
                items: Items::Boxed(items.into_boxed_slice()),
            };
        }
        let inline: [T; N] = std::array::from_fn(|i| items[if i < len { i } else { 0 }].clone());
        Self {
            items: Items::Inline {
                len: len as u8,
                items: inline,
            },
        }
    }
}

impl<T, const N: usize> Deref for SmallList<T, N> {
    type Target = [T];
    #[inline(always)]
    fn deref(&self) -> &[T] {
        match &self.items {
            Items::Inline { len, items } => &items[..*len as usize],
            Items::Boxed(b) => b,
        }
    }
}

impl<T, const N: usize> DerefMut for SmallList<T, N> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut [T] {
        match &mut self.items {
            Items::Inline { len, items } => &mut items[..*len as usize],
            Items::Boxed(b) => b,
        }
    }
}

impl<T: Clone, const N: usize> From<Vec<T>> for SmallList<T, N> {
    fn from(items: Vec<T>) -> Self {
        Self::new(items)
    }
}

impl<T: fmt::Debug, const N: usize> fmt::Debug for SmallList<T, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: PartialEq, const N: usize> PartialEq for SmallList<T, N> {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

#[cfg(test)]
mod tests {
    use super::SmallList;

    #[test]
    fn short_lists_are_inline_and_read_like_their_items() {
        for n in 0..6 {
            let v: Vec<u32> = (0..n).collect();
            let s = SmallList::<u32, 3>::new(v.clone());
            assert_eq!(&*s, v.as_slice());
            let inline = (1..=3).contains(&n);
            assert_eq!(
                matches!(s.items, super::Items::Inline { .. }),
                inline,
                "{n}"
            );
        }
        let mut s = SmallList::<f64, 2>::new(vec![1.0]);
        s[0] = 2.0;
        assert_eq!(&*s, &[2.0]);
        assert_eq!(format!("{s:?}"), "[2.0]");
    }
}
