"""The build's one hook beyond pyproject.toml: the optional C form of `async for`'s record runs
(kconsumer/aio/handout.py). Without a C compiler the install goes on with the Python form."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("kconsumer.aio._handout", ["kconsumer/aio/_handout.c"], optional=True),
    ]
)
