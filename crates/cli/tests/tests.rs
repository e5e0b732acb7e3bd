mod support;

mod it;
mod schema;

mod lab;
mod run;

mod docs;
