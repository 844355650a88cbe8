"""Item-level helpers for the batch stream between rule operators: an item function lifted to a batch operator."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from reactivex import Observable
from reactivex import operators as ops

from ._stage import Batch, Operator

__all__ = ["filter_items", "map_items"]

A = TypeVar("A")
B = TypeVar("B")


def map_items(function: Callable[[A], B]) -> Operator[Batch[A], Batch[B]]:
    """``function`` applied to every item of every batch, the batches kept as they are::

        in:   --[a, b]--[c]--|
        out:  --[f(a), f(b)]--[f(c)]--|
    """

    def per_batch(batch: Batch[A]) -> Batch[B]:
        return [function(item) for item in batch]

    def operator(source: Observable[Batch[A]]) -> Observable[Batch[B]]:
        return source.pipe(ops.map(per_batch))

    return operator


def filter_items(predicate: Callable[[A], bool]) -> Operator[Batch[A], Batch[A]]:
    """Only the items ``predicate`` accepts; a batch left empty is not emitted::

        in:   --[a, b]--[c]--|        (predicate accepts a)
        out:  --[a]-----------|
    """

    def per_batch(batch: Batch[A]) -> Batch[A]:
        return [item for item in batch if predicate(item)]

    def operator(source: Observable[Batch[A]]) -> Observable[Batch[A]]:
        return source.pipe(ops.map(per_batch), ops.filter(bool))

    return operator
