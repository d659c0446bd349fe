export default function PlanTable({children}) { return <table className="plan-table">{children}</table>; }
