mod support;

mod it;
mod schema;
